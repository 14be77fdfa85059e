// fetch-discovery is oauth2-proxy v7.15.6's start-up discovery, run on its own: the same module
// graph as the oauth2-proxy binary the parity tests run (this module), and oauth2-proxy's own code
// for every step, so the fetch differential (tests/fetch_differential.rs) compares the gate with
// what the real client does, not with our reading of it.
//
// The steps, in oauth2-proxy's order:
//   - pkg/validation/options.go, Validate: with OAUTH2_PROXY_SSL_INSECURE_SKIP_VERIFY, the
//     shared transport skips certificate checks; else, with provider CA files, its
//     TLSClientConfig is replaced by {RootCAs: util.GetCertPool(files, useSystemTrustStore),
//     MinVersion: TLS 1.2}; else Go's defaults stay (the system pool: SSL_CERT_FILE, SSL_CERT_DIR).
//     requests.DefaultTransport is http.DefaultTransport itself, so proxies come from Go's
//     ProxyFromEnvironment, HTTP/2 is attempted, gzip is asked for, and there is no timeout.
//   - oauthproxy.go, NewOAuthProxy -> providers/providers.go, newProviderDataFromConfig ->
//     pkg/providers/oidc/provider_verifier.go, NewProviderVerifier and getVerifierBuilder (the
//     context carries requests.DefaultHTTPClient) -> pkg/providers/oidc/provider.go, NewProvider:
//     GET issuer (one trailing "/" trimmed) +
//     "/.well-known/openid-configuration" through pkg/requests (builder.go do: http.Client with
//     the default redirect policy, io.ReadAll of the body; result.go UnmarshalInto: status 200
//     only, then json.Unmarshal into providerJSON), then the issuer compared byte for byte unless
//     OAUTH2_PROXY_INSECURE_OIDC_SKIP_ISSUER_VERIFICATION; then the signing algorithms are
//     intersected with the configured ones (none by default) and the verifier is built (no fetch).
//     go-oidc's oidc.NewProvider is not called.
//
// The variables are the ones oauth2-proxy reads (and the gate reads too); a list is split on
// commas, as oauth2-proxy's configuration loader splits an environment value. Prints "ok" or the
// error oauth2-proxy would log, and exits 0 or 1; 2 for a variable oauth2-proxy would refuse.
package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"

	"github.com/oauth2-proxy/oauth2-proxy/v7/pkg/logger"
	internaloidc "github.com/oauth2-proxy/oauth2-proxy/v7/pkg/providers/oidc"
	"github.com/oauth2-proxy/oauth2-proxy/v7/pkg/requests"
	"github.com/oauth2-proxy/oauth2-proxy/v7/pkg/util"
)

func flag(name string) bool {
	value := os.Getenv(name)
	if value == "" {
		return false
	}
	b, err := strconv.ParseBool(value)
	if err != nil {
		fmt.Printf("%s: %v\n", name, err)
		os.Exit(2)
	}
	return b
}

func list(name string) []string {
	var out []string
	for _, item := range strings.Split(os.Getenv(name), ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

func main() {
	// "Performing OIDC Discovery..." and the like go to stderr; stdout carries the verdict only.
	logger.SetOutput(io.Discard)
	logger.SetErrOutput(os.Stderr)

	// pkg/validation/options.go, Validate.
	if flag("OAUTH2_PROXY_SSL_INSECURE_SKIP_VERIFY") {
		transport := requests.DefaultTransport.(*http.Transport)
		transport.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} // #nosec G402 -- as oauth2-proxy
	} else if files := list("OAUTH2_PROXY_PROVIDER_CA_FILES"); len(files) > 0 {
		pool, err := util.GetCertPool(files, flag("OAUTH2_PROXY_USE_SYSTEM_TRUST_STORE"))
		if err != nil {
			fmt.Printf("unable to load provider CA file(s): %v\n", err)
			os.Exit(2)
		}
		transport := requests.DefaultTransport.(*http.Transport)
		transport.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}

	// providers/providers.go, newProviderDataFromConfig, with the options the parity tests give
	// oauth2-proxy (client "oauth2-proxy"; discovery on; no configured signing algorithms).
	_, err := internaloidc.NewProviderVerifier(context.TODO(), internaloidc.ProviderVerifierOptions{
		ClientID:               "oauth2-proxy",
		IssuerURL:              os.Getenv("OAUTH2_PROXY_OIDC_ISSUER_URL"),
		SkipIssuerVerification: flag("OAUTH2_PROXY_INSECURE_OIDC_SKIP_ISSUER_VERIFICATION"),
	})
	if err != nil {
		fmt.Println(strings.ReplaceAll(err.Error(), "\n", " "))
		os.Exit(1)
	}
	fmt.Println("ok")
}

// jwks-consumer starts the way the dashboard token proxy starts: it registers the API server's
// JWKS URL with lestrrat-go/jwx's jwk.Cache, sending the service-account token as a bearer token
// and trusting the cluster CA, with Register's default WaitReady; when that first fetch fails it
// panics (the pod's CrashLoopBackOff). When it succeeds it serves /ping until it is stopped.
//
// Environment, as in deploy/kubernetes/token-proxy-jwks.yaml: JWKS_URL, plus TOKEN_FILE and
// CA_FILE (the projected token and ca.crt), and LISTEN (host:port for /ping).
//
// Register waits on the context it is given; with context.Background() a failed first fetch
// does not return at all until httprc's next try (DefaultMinInterval, 15 minutes). Programs
// bound their start-up instead, as this one does (STARTUP_TIMEOUT, default 10s), and panic.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/lestrrat-go/httprc/v3"
	"github.com/lestrrat-go/jwx/v3/jwk"
)

type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

func main() {
	url := os.Getenv("JWKS_URL")
	token, err := os.ReadFile(os.Getenv("TOKEN_FILE"))
	if err != nil {
		panic(err)
	}
	pem, err := os.ReadFile(os.Getenv("CA_FILE"))
	if err != nil {
		panic(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		panic("no certificate in CA_FILE")
	}
	client := &http.Client{
		Timeout: 30 * time.Second,
		Transport: bearer{strings.TrimSpace(string(token)),
			&http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}},
	}
	startup := 10 * time.Second
	if s := os.Getenv("STARTUP_TIMEOUT"); s != "" {
		if startup, err = time.ParseDuration(s); err != nil {
			panic(err)
		}
	}
	ctx := context.Background()
	cache, err := jwk.NewCache(ctx, httprc.NewClient())
	if err != nil {
		panic(err)
	}
	registerCtx, cancel := context.WithTimeout(ctx, startup)
	defer cancel()
	if err := cache.Register(registerCtx, url, jwk.WithHTTPClient(client)); err != nil {
		panic(fmt.Sprintf("jwks: first fetch of %s failed: %v", url, err))
	}
	set, err := cache.Lookup(ctx, url)
	if err != nil {
		panic(err)
	}
	fmt.Printf("jwks-consumer: %d keys from %s\n", set.Len(), url)
	http.HandleFunc("/ping", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "OK") })
	panic(http.ListenAndServe(os.Getenv("LISTEN"), nil))
}

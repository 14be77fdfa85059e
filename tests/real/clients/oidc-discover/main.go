// oidc-discover makes go-oidc's oidc.NewProvider call (most Go clients' discovery; oauth2-proxy has
// its own, see tests/real/oauth2-proxy/fetch-discovery) against ISSUER (trusting CA_FILE when set,
// else the system's roots), and prints "ok" or the error it returned; exit 0 or 1.
// The parity tests use it as a library oracle for the document rules.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
)

func main() {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	if path := os.Getenv("CA_FILE"); path != "" {
		pem, err := os.ReadFile(path)
		if err != nil {
			fmt.Println(err)
			os.Exit(2)
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(pem)
		transport.TLSClientConfig = &tls.Config{RootCAs: pool}
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: transport}
	ctx := oidc.ClientContext(context.Background(), client)
	if _, err := oidc.NewProvider(ctx, os.Getenv("ISSUER")); err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	fmt.Println("ok")
}

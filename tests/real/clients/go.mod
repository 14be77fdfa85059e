// Two real clients as small programs: a JWKS consumer built the way the dashboard token proxy is
// (lestrrat-go/jwx jwk.Cache, Register with the default WaitReady, panic on the first failure), and
// go-oidc's oidc.NewProvider, the discovery call of most Go clients, as a library oracle; and
// state-server, the fetch differential's provider states and proxies (standard library only).
module waitforidp.test/clients

go 1.26

require (
	github.com/coreos/go-oidc/v3 v3.21.0
	github.com/lestrrat-go/httprc/v3 v3.0.6
	github.com/lestrrat-go/jwx/v3 v3.4.0
)

require (
	github.com/decred/dcrd/dcrec/secp256k1/v4 v4.4.1 // indirect
	github.com/go-jose/go-jose/v4 v4.1.4 // indirect
	github.com/goccy/go-json v0.11.2 // indirect
	github.com/lestrrat-go/blackmagic v1.0.4 // indirect
	github.com/lestrrat-go/httpcc v1.0.1 // indirect
	github.com/lestrrat-go/option/v2 v2.0.0 // indirect
	github.com/segmentio/asm v1.2.1 // indirect
	github.com/valyala/fastjson v1.6.10 // indirect
	golang.org/x/oauth2 v0.36.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
)

// state-server serves one provider state on 127.0.0.1 for the fetch differential
// (tests/fetch_differential.rs), and the proxy the state is reached through, if any: it writes
// HTTP/1.1 itself, so that framing, compression, redirects, header and body sizes and the JSON
// text are exactly what the state names, and takes its TLS versions, cipher suites, groups and
// leaf key from crypto/tls. The leaf is made at start from the test's throwaway CA (its
// certificate and PKCS#8 key given as files).
//
// Usage: state-server '<JSON spec>' (see Spec). It prints one line of JSON with its ports, then
// serves until killed. Everything listens on 127.0.0.1; the proxies connect to 127.0.0.1 only:
// a host name is mapped to 127.0.0.1 (port 443 to the state's own port), a loopback address is
// kept, any other address is refused.
package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Spec is one state. Zero values are the plain state: HTTPS, TLS 1.2-1.3 with Go's suites and
// groups, a P-256 leaf, Content-Length framing, no compression, no redirect, a valid document.
type Spec struct {
	CACert string   `json:"ca_cert"`
	CAKey  string   `json:"ca_key"`
	Names  []string `json:"names"` // the leaf's names (IP addresses become IP SANs)
	// Issuer is the document's issuer; "{port}" stands for the state's port. HostEcho builds it
	// from the request's Host instead, as Keycloak in dev mode does.
	Issuer   string `json:"issuer"`
	HostEcho bool   `json:"host_echo"`
	Plain    bool   `json:"plain"` // plain HTTP instead of HTTPS
	TLSMin   string `json:"tls_min"`
	TLSMax   string `json:"tls_max"`
	Suites   string `json:"suites"` // aes-gcm, chacha20, cbc, cbc-sha256 (TLS 1.2)
	Group    string `json:"group"`  // x25519, p256, p384, p521, x25519mlkem768
	Key      string `json:"key"`    // p256, p384, p521, rsa1024, rsa2048, ed25519
	H2Only   bool   `json:"h2_only"`
	Framing  string `json:"framing"`  // length, chunked, close, truncated
	Encoding string `json:"encoding"` // identity, gzip-if-asked, gzip, deflate
	// Redirects before the document: each a RedirectStatus to the next hop, on the same origin,
	// alternating with another origin (another port), or with the last hop on plain HTTP.
	Redirects      int    `json:"redirects"`
	RedirectStatus int    `json:"redirect_status"`
	RedirectTarget string `json:"redirect_target"` // same, other-origin, http
	HeaderBytes    int    `json:"header_bytes"`    // padding header lines of 16 KiB, about this many bytes
	HeaderFields   int    `json:"header_fields"`   // this many small padding header lines besides
	BodyBytes      int    `json:"body_bytes"`      // the document padded to this many bytes
	JSON           string `json:"json"`            // the document's text variant (see document)
	Proxy          *Proxy `json:"proxy"`
	// Alias: another loopback address (127.x.y.z) the test's clients resolve the name to, where
	// the state also listens, on its ports and on the scheme's default port: a client that goes
	// direct reaches the state too, as it would in a cluster whose DNS answers.
	Alias string `json:"alias"`
}

// Proxy is the proxy the state is reached through.
type Proxy struct {
	Kind string `json:"kind"` // http (CONNECT and absolute-form), https (the same over TLS), socks5
	User string `json:"user"`
	Pass string `json:"pass"`
}

type ports struct {
	Port      int `json:"port"`
	OtherPort int `json:"other_port"`
	HTTPPort  int `json:"http_port"`
	ProxyPort int `json:"proxy_port,omitempty"`
	// GET /routes there: how the connections since the last such request came, direct or
	// through the proxy (which then resets the count). Its own connections are not counted.
	ControlPort int `json:"control_port"`
	// The server certificate it serves, PEM: a client may pin it (trust it as itself).
	Leaf string `json:"leaf,omitempty"`
}

const wellKnown = "/.well-known/openid-configuration"

func main() {
	var spec Spec
	if len(os.Args) != 2 || json.Unmarshal([]byte(os.Args[1]), &spec) != nil {
		fail("usage: state-server '<JSON spec>'")
	}
	caCert, caKey := loadCA(spec.CACert, spec.CAKey)
	first, other, plain := counted(listen()), counted(listen()), counted(listen())
	control := listen()
	p := ports{Port: port(first), OtherPort: port(other), HTTPPort: port(plain), ControlPort: port(control)}
	go http.Serve(control, http.HandlerFunc(routesSince))
	s := &server{spec: spec, ports: &p}
	var serveState func(l net.Listener)
	if spec.Plain {
		serveState = func(l net.Listener) { s.serveRaw(l, nil, "http") }
	} else {
		served := leaf(caCert, caKey, spec.Key, spec.Names)
		p.Leaf = string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: served.Certificate[0]}))
		cfg := s.tlsConfig(served)
		if spec.H2Only {
			serveState = func(l net.Listener) { s.serveH2(l, cfg) }
		} else {
			serveState = func(l net.Listener) { s.serveRaw(l, cfg, "https") }
		}
	}
	go serveState(first)
	go serveState(other)
	go s.serveRaw(plain, nil, "http")
	if spec.Alias != "" {
		defaultPort := 443
		if spec.Plain {
			defaultPort = 80
		}
		for _, port := range []int{p.Port, p.OtherPort, defaultPort} {
			go serveState(counted(listenAt(spec.Alias, port)))
		}
		go s.serveRaw(counted(listenAt(spec.Alias, p.HTTPPort)), nil, "http")
	}
	if spec.Proxy != nil {
		l := listen()
		p.ProxyPort = port(l)
		var proxyTLS *tls.Config
		if spec.Proxy.Kind == "https" {
			proxyTLS = &tls.Config{Certificates: []tls.Certificate{leaf(caCert, caKey, "p256", []string{"localhost", "127.0.0.1"})}}
		}
		go serveProxy(l, spec.Proxy, proxyTLS, p.Port)
	}
	line, _ := json.Marshal(p)
	fmt.Println(string(line))
	select {}
}

// The routes connections came by: the peer address of each connection accepted, and the local
// address of each connection the proxy dialled. They are matched when asked, by then every dial
// has been recorded (the server may accept a connection before the proxy's Dial returns).
var routes struct {
	sync.Mutex
	accepted []string
	proxied  map[string]bool
}

// countingListener records the peer of every connection it accepts.
type countingListener struct{ net.Listener }

func counted(l net.Listener) net.Listener { return countingListener{l} }

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		routes.Lock()
		routes.accepted = append(routes.accepted, c.RemoteAddr().String())
		routes.Unlock()
	}
	return c, err
}

// dialRecorded dials for the proxy and records the connection as proxied.
func dialRecorded(addr string) (net.Conn, error) {
	up, err := net.Dial("tcp", addr)
	if err == nil {
		routes.Lock()
		if routes.proxied == nil {
			routes.proxied = map[string]bool{}
		}
		routes.proxied[up.LocalAddr().String()] = true
		routes.Unlock()
	}
	return up, err
}

// routesSince answers {"direct": n, "proxied": m} for the connections since the last answer.
func routesSince(w http.ResponseWriter, _ *http.Request) {
	routes.Lock()
	direct, proxied := 0, 0
	for _, peer := range routes.accepted {
		if routes.proxied[peer] {
			proxied++
		} else {
			direct++
		}
	}
	routes.accepted, routes.proxied = nil, nil
	routes.Unlock()
	json.NewEncoder(w).Encode(map[string]int{"direct": direct, "proxied": proxied})
}

func fail(msg string, args ...any) {
	fmt.Fprintf(os.Stderr, "state-server: "+msg+"\n", args...)
	os.Exit(2)
}

func listen() net.Listener {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fail("listen: %v", err)
	}
	return l
}

func listenAt(host string, port int) net.Listener {
	l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		fail("listen: %v", err)
	}
	return l
}

func port(l net.Listener) int { return l.Addr().(*net.TCPAddr).Port }

func loadCA(certPath, keyPath string) (*x509.Certificate, crypto.Signer) {
	certPEM, err := os.ReadFile(certPath)
	if err != nil {
		fail("CA certificate: %v", err)
	}
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		fail("CA key: %v", err)
	}
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		fail("CA files are not PEM")
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		fail("CA certificate: %v", err)
	}
	key, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil {
		fail("CA key: %v", err)
	}
	return cert, key.(crypto.Signer)
}

// leaf makes a certificate for names with a key of the given type, signed by the CA.
func leaf(ca *x509.Certificate, caKey crypto.Signer, kind string, names []string) tls.Certificate {
	var key crypto.Signer
	var err error
	switch kind {
	case "", "p256":
		key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case "p384":
		key, err = ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	case "p521":
		key, err = ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
	case "rsa1024":
		key, err = rsa.GenerateKey(rand.Reader, 1024)
	case "rsa2048":
		key, err = rsa.GenerateKey(rand.Reader, 2048)
	case "ed25519":
		_, key, err = ed25519.GenerateKey(rand.Reader)
	default:
		fail("unknown key %q", kind)
	}
	if err != nil {
		fail("key: %v", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: names[0]},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, key.Public(), caKey)
	if err != nil {
		fail("certificate: %v", err)
	}
	return tls.Certificate{Certificate: [][]byte{der, ca.Raw}, PrivateKey: key}
}

var versions = map[string]uint16{"1.0": tls.VersionTLS10, "1.1": tls.VersionTLS11, "1.2": tls.VersionTLS12, "1.3": tls.VersionTLS13}

var suites = map[string][]uint16{
	"aes-gcm": {tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
		tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384},
	"chacha20":   {tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256, tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256},
	"cbc":        {tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA, tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA, tls.TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA, tls.TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA},
	"cbc-sha256": {tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256, tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256},
}

var groups = map[string]tls.CurveID{"x25519": tls.X25519, "p256": tls.CurveP256, "p384": tls.CurveP384,
	"p521": tls.CurveP521, "x25519mlkem768": tls.X25519MLKEM768}

func (s *server) tlsConfig(cert tls.Certificate) *tls.Config {
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"http/1.1"}}
	if s.spec.TLSMin != "" {
		cfg.MinVersion = versions[s.spec.TLSMin]
	}
	if s.spec.TLSMax != "" {
		cfg.MaxVersion = versions[s.spec.TLSMax]
	}
	if s.spec.Suites != "" {
		cfg.CipherSuites = suites[s.spec.Suites]
		if cfg.CipherSuites == nil {
			fail("unknown suites %q", s.spec.Suites)
		}
	}
	if s.spec.Group != "" {
		g, ok := groups[s.spec.Group]
		if !ok {
			fail("unknown group %q", s.spec.Group)
		}
		cfg.CurvePreferences = []tls.CurveID{g}
	}
	if s.spec.H2Only {
		cfg.NextProtos = []string{"h2"}
	}
	return cfg
}

type server struct {
	spec  Spec
	ports *ports
}

// serveH2 serves HTTP/2 only (ALPN "h2"; HTTP/1 off), through net/http.
func (s *server) serveH2(l net.Listener, cfg *tls.Config) {
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		status, headers, body := s.respond(r.URL.Path, r.Host, r.Header.Get("Accept-Encoding"), "https")
		for _, h := range headers {
			w.Header().Add(h[0], h[1])
		}
		w.WriteHeader(status)
		w.Write(body)
	}), TLSConfig: cfg, ErrorLog: nil}
	srv.Protocols = new(http.Protocols)
	srv.Protocols.SetHTTP2(true)
	srv.ServeTLS(l, "", "")
}

func (s *server) serveRaw(l net.Listener, cfg *tls.Config, scheme string) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		if cfg != nil {
			c = tls.Server(c, cfg)
		}
		go s.conn(c, scheme)
	}
}

// conn answers requests on one connection, keeping it open unless the framing closes it.
func (s *server) conn(c net.Conn, scheme string) {
	defer c.Close()
	r := bufio.NewReader(c)
	for {
		c.SetReadDeadline(time.Now().Add(60 * time.Second))
		req, err := http.ReadRequest(r)
		if err != nil {
			return
		}
		io.Copy(io.Discard, req.Body)
		status, headers, body := s.respond(req.URL.Path, req.Host, req.Header.Get("Accept-Encoding"), scheme)
		var out bytes.Buffer
		fmt.Fprintf(&out, "HTTP/1.1 %d %s\r\n", status, http.StatusText(status))
		for _, h := range headers {
			fmt.Fprintf(&out, "%s: %s\r\n", h[0], h[1])
		}
		framing := "length"
		if status == 200 && s.spec.Framing != "" {
			framing = s.spec.Framing
		}
		switch framing {
		case "length":
			fmt.Fprintf(&out, "Content-Length: %d\r\n\r\n", len(body))
			out.Write(body)
		case "chunked":
			out.WriteString("Transfer-Encoding: chunked\r\n\r\n")
			for rest := body; len(rest) > 0; {
				n := min(len(rest), 16384)
				fmt.Fprintf(&out, "%x\r\n", n)
				out.Write(rest[:n])
				out.WriteString("\r\n")
				rest = rest[n:]
			}
			out.WriteString("0\r\n\r\n")
		case "close":
			out.WriteString("Connection: close\r\n\r\n")
			out.Write(body)
		case "truncated":
			fmt.Fprintf(&out, "Content-Length: %d\r\nConnection: close\r\n\r\n", len(body)+100)
			out.Write(body)
		}
		if _, err := c.Write(out.Bytes()); err != nil || framing == "close" || framing == "truncated" {
			return
		}
	}
}

// respond is the state's answer to one request: redirects, then the document, 404 elsewhere.
func (s *server) respond(path, host, acceptEncoding, scheme string) (int, [][2]string, []byte) {
	hop := -1
	if path == wellKnown {
		hop = 0
	} else if rest, ok := strings.CutPrefix(path, "/hop/"); ok {
		if n, err := strconv.Atoi(rest); err == nil {
			hop = n
		}
	}
	if hop < 0 {
		return 404, [][2]string{{"Content-Type", "application/json"}}, []byte(`{"error":"not found"}`)
	}
	if hop < s.spec.Redirects {
		return s.spec.RedirectStatus, [][2]string{{"Location", s.next(hop+1, host)}}, nil
	}
	issuer := strings.ReplaceAll(s.spec.Issuer, "{port}", strconv.Itoa(s.ports.Port))
	if s.spec.HostEcho {
		issuer = "https://" + host
		if s.spec.Plain {
			issuer = "http://" + host
		}
	}
	headers := [][2]string{{"Content-Type", "application/json"}}
	for i := 0; i*16384 < s.spec.HeaderBytes; i++ {
		headers = append(headers, [2]string{fmt.Sprintf("X-Pad-%d", i), strings.Repeat("p", 16368)})
	}
	for i := 0; i < s.spec.HeaderFields; i++ {
		headers = append(headers, [2]string{fmt.Sprintf("X-Field-%d", i), "f"})
	}
	body := document(issuer, s.spec.JSON, s.spec.BodyBytes)
	switch enc := s.spec.Encoding; {
	case enc == "gzip" || enc == "gzip-if-asked" && strings.Contains(acceptEncoding, "gzip"):
		var b bytes.Buffer
		z := gzip.NewWriter(&b)
		z.Write(body)
		z.Close()
		body = b.Bytes()
		headers = append(headers, [2]string{"Content-Encoding", "gzip"})
	case enc == "deflate":
		var b bytes.Buffer
		z := zlib.NewWriter(&b)
		z.Write(body)
		z.Close()
		body = b.Bytes()
		headers = append(headers, [2]string{"Content-Encoding", "deflate"})
	}
	return 200, headers, body
}

// next is the Location of hop n.
func (s *server) next(n int, host string) string {
	hostname := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		hostname = h
	}
	if strings.Contains(hostname, ":") {
		hostname = "[" + hostname + "]"
	}
	scheme := "https"
	if s.spec.Plain {
		scheme = "http"
	}
	switch s.spec.RedirectTarget {
	case "other-origin":
		p := s.ports.Port
		if n%2 == 1 {
			p = s.ports.OtherPort
		}
		return fmt.Sprintf("%s://%s:%d/hop/%d", scheme, hostname, p, n)
	case "http":
		if n == s.spec.Redirects {
			return fmt.Sprintf("http://%s:%d/hop/%d", hostname, s.ports.HTTPPort, n)
		}
	}
	return fmt.Sprintf("/hop/%d", n)
}

// document is the discovery document for issuer in one of its text variants, padded to size.
func document(issuer, variant string, size int) []byte {
	base := strings.TrimSuffix(issuer, "/")
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	issuerText := q(issuer)
	extra := ""
	prefix := ""
	switch variant {
	case "", "plain":
	case "latin1-extension":
		extra = `,"x_display_name":"Caf` + "\xe9" + ` SSO"`
	case "latin1-issuer":
		issuerText = q(issuer)[:len(q(issuer))-1] + "\xe9\""
	case "lone-surrogate-extension":
		extra = `,"x_display_name":"broken \ud800 pair"`
	case "lone-surrogate-issuer":
		issuerText = q(issuer)[:len(q(issuer))-1] + `\udc00"`
	case "bom":
		prefix = "\ufeff"
	case "escaped-issuer":
		issuerText = strings.ReplaceAll(strings.Replace(q(issuer), "h", `\u0068`, 1), "/", `\/`)
	case "big-number":
		extra = `,"x_max_age":1e400`
	case "duplicate-issuer":
		extra = `,"issuer":"https://wrong.example"`
	case "trailing-space":
	default:
		if d, ok := strings.CutPrefix(variant, "depth-"); ok {
			n, _ := strconv.Atoi(d)
			// The object itself is depth 1; each array one more.
			extra = `,"x_nested":` + strings.Repeat("[", n-1) + strings.Repeat("]", n-1)
		} else {
			fail("unknown JSON variant %q", variant)
		}
	}
	doc := prefix + `{"issuer":` + issuerText +
		`,"authorization_endpoint":` + q(base+"/protocol/openid-connect/auth") +
		`,"token_endpoint":` + q(base+"/protocol/openid-connect/token") +
		`,"jwks_uri":` + q(base+"/protocol/openid-connect/certs") +
		`,"userinfo_endpoint":` + q(base+"/protocol/openid-connect/userinfo") +
		`,"response_types_supported":["code","id_token","code id_token"]` +
		`,"subject_types_supported":["public"]` +
		`,"id_token_signing_alg_values_supported":["RS256"]` +
		`,"grant_types_supported":["authorization_code","refresh_token"]` + extra
	if variant == "duplicate-issuer" {
		// The wrong one first, the right one last: Go keeps the last.
		doc = prefix + `{"issuer":"https://wrong.example",` + strings.TrimPrefix(doc, prefix+"{") + `,"issuer":` + issuerText
		doc = strings.Replace(doc, `,"issuer":"https://wrong.example"`, "", 1)
	}
	if pad := size - len(doc) - len(`,"x_padding":""}`); pad > 0 {
		doc += `,"x_padding":"` + strings.Repeat("a", pad) + `"`
	}
	doc += "}"
	if variant == "trailing-space" {
		doc += "\r\n\t  \n"
	}
	return []byte(doc)
}

// serveProxy serves the proxy: HTTP (CONNECT, or an absolute-form request for plain HTTP),
// optionally over TLS, or SOCKS5; with credentials when User is set.
func serveProxy(l net.Listener, p *Proxy, cfg *tls.Config, statePort int) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		if cfg != nil {
			c = tls.Server(c, cfg)
		}
		if p.Kind == "socks5" {
			go socks(c, p, statePort)
		} else {
			go httpProxy(c, p, statePort)
		}
	}
}

// target maps where a client asked to go to where the state listens.
func target(host string, port string, statePort int) (string, error) {
	if ip := net.ParseIP(host); ip != nil {
		if !ip.IsLoopback() {
			return "", fmt.Errorf("refusing %s: tests talk to loopback only", host)
		}
		return net.JoinHostPort(host, port), nil
	}
	if port == "443" {
		port = strconv.Itoa(statePort)
	}
	return net.JoinHostPort("127.0.0.1", port), nil
}

func httpProxy(c net.Conn, p *Proxy, statePort int) {
	defer c.Close()
	r := bufio.NewReader(c)
	req, err := http.ReadRequest(r)
	if err != nil {
		return
	}
	if p.User != "" {
		want := "Basic " + base64.StdEncoding.EncodeToString([]byte(p.User+":"+p.Pass))
		if req.Header.Get("Proxy-Authorization") != want {
			io.WriteString(c, "HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"test\"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
			return
		}
	}
	hostport := req.Host
	if req.Method != http.MethodConnect {
		hostport = req.URL.Host
		if req.URL.Port() == "" {
			hostport = net.JoinHostPort(req.URL.Hostname(), "80")
		}
	}
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		io.WriteString(c, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
		return
	}
	addr, err := target(host, port, statePort)
	var up net.Conn
	if err == nil {
		up, err = dialRecorded(addr)
	}
	if err != nil {
		io.WriteString(c, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
		return
	}
	defer up.Close()
	if req.Method == http.MethodConnect {
		io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n")
	} else {
		req.Header.Del("Proxy-Authorization")
		req.Header.Set("Connection", "close")
		req.Close = true
		if err := req.Write(up); err != nil {
			return
		}
	}
	splice(c, r, up)
}

// splice copies both ways until either side closes.
func splice(c net.Conn, buffered io.Reader, up net.Conn) {
	done := make(chan struct{}, 2)
	go func() { io.Copy(up, buffered); done <- struct{}{} }()
	go func() { io.Copy(c, up); done <- struct{}{} }()
	<-done
}

// socks is SOCKS5 (RFC 1928) with no authentication or username/password (RFC 1929), CONNECT only.
func socks(c net.Conn, p *Proxy, statePort int) {
	defer c.Close()
	r := bufio.NewReader(c)
	head := make([]byte, 2)
	if _, err := io.ReadFull(r, head); err != nil || head[0] != 5 {
		return
	}
	methods := make([]byte, head[1])
	if _, err := io.ReadFull(r, methods); err != nil {
		return
	}
	want := byte(0)
	if p.User != "" {
		want = 2
	}
	if !bytes.Contains(methods, []byte{want}) {
		c.Write([]byte{5, 0xff})
		return
	}
	c.Write([]byte{5, want})
	if want == 2 {
		ver := make([]byte, 2)
		if _, err := io.ReadFull(r, ver); err != nil {
			return
		}
		user := make([]byte, ver[1])
		io.ReadFull(r, user)
		plen := make([]byte, 1)
		io.ReadFull(r, plen)
		pass := make([]byte, plen[0])
		io.ReadFull(r, pass)
		if string(user) != p.User || string(pass) != p.Pass {
			c.Write([]byte{1, 1})
			return
		}
		c.Write([]byte{1, 0})
	}
	req := make([]byte, 4)
	if _, err := io.ReadFull(r, req); err != nil || req[1] != 1 {
		c.Write([]byte{5, 7, 0, 1, 0, 0, 0, 0, 0, 0})
		return
	}
	var host string
	switch req[3] {
	case 1:
		b := make([]byte, 4)
		io.ReadFull(r, b)
		host = net.IP(b).String()
	case 4:
		b := make([]byte, 16)
		io.ReadFull(r, b)
		host = net.IP(b).String()
	case 3:
		l := make([]byte, 1)
		io.ReadFull(r, l)
		b := make([]byte, l[0])
		io.ReadFull(r, b)
		host = string(b)
	}
	pb := make([]byte, 2)
	io.ReadFull(r, pb)
	addr, err := target(host, strconv.Itoa(int(pb[0])<<8|int(pb[1])), statePort)
	var up net.Conn
	if err == nil {
		up, err = dialRecorded(addr)
	}
	if err != nil {
		c.Write([]byte{5, 5, 0, 1, 0, 0, 0, 0, 0, 0})
		return
	}
	defer up.Close()
	c.Write([]byte{5, 0, 0, 1, 127, 0, 0, 1, 0, 0})
	splice(c, r, up)
}

package httpx

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/gofiber/fiber/v2"
)

// Proxies are the addresses whose X-Forwarded-* headers the server
// believes (Config.TrustedProxies). From anyone else the connection decides
// the client's address, and the Host header, checked, the site's origin.
// This file owns those decisions: the client's IP and its key (the same
// for every address of one IPv6 /64: every per-client limit's key), and
// the base URL of feed ids and badge snippets (Clients.Base).
type Proxies []netip.Prefix

// ParseProxies reads IPs and CIDRs ("10.0.0.0/8", "127.0.0.1", "::1").
func ParseProxies(list []string) (Proxies, error) {
	var out Proxies
	for _, s := range list {
		s = strings.TrimSpace(s)
		if p, err := netip.ParsePrefix(s); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("web: trusted proxy %q: want an IP address or a CIDR", s)
		}
		out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
	}
	return out, nil
}

// trusts reports whether a is one of the trusted Proxies.
func (p Proxies) trusts(a netip.Addr) bool {
	a = a.Unmap()
	for _, pre := range p {
		if pre.Contains(a) {
			return true
		}
	}
	return false
}

// clientIP is the client's address: the connection's, unless that is a
// trusted proxy; then X-Forwarded-For is read from the right (each proxy
// appends the address it saw) and the first address that is not a trusted
// proxy is the client. What the client itself wrote further left is never
// believed. A malformed entry stops the walk at the last address known.
func (p Proxies) clientIP(remote netip.Addr, xff []string) netip.Addr {
	remote = remote.Unmap()
	if !p.trusts(remote) {
		return remote
	}
	var hops []string
	for _, v := range xff {
		hops = append(hops, strings.Split(v, ",")...)
	}
	client := remote
	for i := len(hops) - 1; i >= 0; i-- {
		a, ok := parseHop(strings.TrimSpace(hops[i]))
		if !ok {
			return client
		}
		client = a
		if !p.trusts(a) {
			return a
		}
	}
	return client
}

// parseHop reads one X-Forwarded-For entry: an address, maybe with a port.
func parseHop(s string) (netip.Addr, bool) {
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap(), true
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap(), true
	}
	return netip.Addr{}, false
}

// Clients says who a request's client is and what the site's base URL is
// for it: the server's Config.TrustedProxies, IPv6ClientPrefix and
// PublicURL.
type Clients struct {
	Proxies   Proxies
	V6Bits    int    // an IPv6 client's prefix length (ClientKey)
	PublicURL string // "": derived from each request (Base)
}

// IP is the request's client address (see Proxies.clientIP), for logs.
func (k *Clients) IP(c *fiber.Ctx) string { return k.Addr(c).String() }

// Addr is the request's client address (see Proxies.clientIP).
func (k *Clients) Addr(c *fiber.Ctx) netip.Addr {
	remote, _ := netip.AddrFromSlice(c.Context().RemoteIP())
	if len(k.Proxies) == 0 {
		return remote.Unmap()
	}
	var xff []string
	for _, v := range c.Request().Header.PeekAll(fiber.HeaderXForwardedFor) {
		xff = append(xff, string(v))
	}
	return k.Proxies.clientIP(remote, xff)
}

// ClientKey is the client key of an address, the one key of every
// per-client limit (the API's rate, test requests): an IPv4 address (an
// IPv4-mapped IPv6 one too) is a client of its own; an IPv6 address counts
// by its first v6Bits bits ("2001:db8:1:2::/64"), since whoever holds one
// address of a /64 can take any other. v6Bits is 1 to 128.
func ClientKey(a netip.Addr, v6Bits int) string {
	a = a.Unmap().WithZone("")
	if !a.Is6() {
		return a.String()
	}
	p, err := a.Prefix(v6Bits)
	if err != nil { // bits out of range: Config is checked at New
		return a.String()
	}
	return p.String()
}

// Key is the request's client key (see ClientKey).
func (k *Clients) Key(c *fiber.Ctx) string { return ClientKey(k.Addr(c), k.V6Bits) }

// Base is the site's public base URL: Config.PublicURL, else derived from
// the request: the scheme and host the connection had, or, from a trusted
// proxy (fiber's EnableTrustedProxyCheck with TrustedProxies), what it
// forwarded. The scheme is only ever http or https, the host only a host
// name or address with an optional port; anything else falls back to the
// connection's. A response that uses it depends on those headers and says
// so (Vary), so that no cache serves one host's URLs to another.
func (k *Clients) Base(c *fiber.Ctx) string {
	if k.PublicURL != "" {
		return k.PublicURL
	}
	c.Vary(fiber.HeaderHost, fiber.HeaderXForwardedHost, fiber.HeaderXForwardedProto)
	scheme := "http"
	if c.Context().IsTLS() {
		scheme = "https"
	}
	if p := strings.ToLower(c.Protocol()); p == "http" || p == "https" {
		scheme = p // the connection's, or a trusted proxy's
	}
	host := c.Hostname() // the Host header, or a trusted proxy's X-Forwarded-Host
	if !ValidHost(host) {
		host = string(c.Request().URI().Host())
	}
	if !ValidHost(host) {
		host = "localhost"
	}
	return scheme + "://" + host
}

// ValidHost reports whether h is a host for a URL: a DNS name or IPv4
// address, or a bracketed IPv6 address, with an optional port.
func ValidHost(h string) bool {
	if h == "" || len(h) > 262 {
		return false
	}
	name, port := h, ""
	if strings.HasPrefix(h, "[") {
		end := strings.IndexByte(h, ']')
		if end < 0 {
			return false
		}
		if a, err := netip.ParseAddr(h[1:end]); err != nil || !a.Is6() {
			return false
		}
		name, port = "", h[end+1:]
		if port != "" && port[0] != ':' {
			return false
		}
		port = strings.TrimPrefix(port, ":")
	} else if i := strings.LastIndexByte(h, ':'); i >= 0 {
		name, port = h[:i], h[i+1:]
		if name == "" {
			return false
		}
	}
	for i := 0; i < len(port); i++ {
		if port[i] < '0' || port[i] > '9' || len(port) > 5 {
			return false
		}
	}
	if strings.HasSuffix(h, ":") {
		return false
	}
	for _, label := range strings.Split(name, ".") {
		if name == "" {
			break
		}
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}

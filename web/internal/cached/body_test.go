package cached

import (
	"bytes"
	"compress/gzip"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestAcceptsGzip(t *testing.T) {
	for header, want := range map[string]bool{
		"":                        false,
		"gzip":                    true,
		"GZip":                    true,
		"x-gzip":                  true,
		"gzip, deflate, br, zstd": true, // what a browser sends
		"br, gzip":                true,
		"deflate, br":             false,
		"identity":                false,
		"gzip;q=0":                false,
		"gzip; q=0.0":             false,
		"gzip;q=0.001":            true,
		"gzip; Q=1":               true,
		"gzip;q=1":                true, // the top weight is a weight
		"gzip;q=1.001":            false,
		"gzip;level=1":            true, // an unknown parameter: weight 1
		"gzip;q=2":                false,
		"gzip;q=-1":               false,
		"gzip;q=high":             false,
		"*":                       true,
		"*;q=0":                   false,
		"br, *":                   true,
		"gzip;q=0, *":             false, // gzip named: * does not bring it back
		"*, gzip;q=0":             false,
		"*;q=0, gzip":             true,
		"gzipx, xgzip":            false,
	} {
		if got := AcceptsGzip(header); got != want {
			t.Errorf("AcceptsGzip(%q) = %v, want %v", header, got, want)
		}
	}
}

func TestEncodeBodyKeepsGzipOnlyWhenWorthIt(t *testing.T) {
	small := Encode([]byte(strings.Repeat("a", GzipFrom-1)))
	if small.gz != nil {
		t.Errorf("a body of %d bytes was gzipped", GzipFrom-1)
	}
	if at := Encode([]byte(strings.Repeat("a", GzipFrom))); at.gz == nil {
		t.Errorf("a body of %d bytes (GzipFrom) was not gzipped", GzipFrom)
	}
	big := bytes.Repeat([]byte("<tr><td>model</td></tr>\n"), 200)
	e := Encode(big)
	if e.gz == nil || len(e.gz) >= len(big)/4 {
		t.Fatalf("a repetitive %d-byte body gzipped to %d bytes", len(big), len(e.gz))
	}
	zr, err := gzip.NewReader(bytes.NewReader(e.gz))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := io.ReadAll(zr); err != nil || !bytes.Equal(got, big) {
		t.Errorf("gzip does not inflate to the body: %v", err)
	}
	if e.Size() != len(big)+len(e.gz) {
		t.Errorf("size %d, holds %d", e.Size(), len(big)+len(e.gz))
	}
	// Bytes that do not compress (random ones: gzip only adds its framing)
	// are kept once.
	noise := make([]byte, 4096)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range noise {
		noise[i] = byte(rng.Uint32())
	}
	if n := Encode(noise); n.gz != nil || n.Size() != len(noise) {
		t.Errorf("kept a gzip of %d bytes for %d random bytes", len(n.gz), len(noise))
	}
}

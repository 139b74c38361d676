package web

import (
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/google-pytorch/torchtpu-scanner/store/storetest"
)

// benchServe runs the handler of path b.N times in memory (no network).
func benchServe(b *testing.B, nModels, nResults int, path string) {
	db := storetest.MustOpen(b)
	storetest.MustSeed(b, db, nModels, nResults)
	s, err := New(Config{Store: db, Logger: discard, APIRate: -1})
	if err != nil {
		b.Fatal(err)
	}
	h := s.app.Handler()
	var ctx fasthttp.RequestCtx
	ctx.Request.SetRequestURI(path)
	h(&ctx)
	if code := ctx.Response.StatusCode(); code != 200 {
		b.Fatalf("%s: %d %s", path, code, ctx.Response.Body())
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ctx.Response.Reset()
		h(&ctx)
	}
}

func BenchmarkBadge(b *testing.B) { benchServe(b, 2000, 10000, "/badge/"+storetest.ModelID(7)+".svg") }
func BenchmarkAPIList(b *testing.B) {
	benchServe(b, 2000, 10000, "/api/v1/models?limit=50")
}
func BenchmarkTable(b *testing.B) { benchServe(b, 2000, 10000, "/") }
func BenchmarkModelPage(b *testing.B) {
	benchServe(b, 2000, 10000, "/models/"+storetest.ModelID(7))
}

func BenchmarkFeed(b *testing.B) { benchServe(b, 2000, 10000, "/feed.json") }

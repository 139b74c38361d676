package store_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/store/storetest"
)

// Another process's write (here another Store on the same file) is seen
// by Changed within ForeignWritesSeenWithin; until then Changed may answer
// from memory, which is the point: no query per cached page.
func TestChangedSeesAForeignWriteWithinItsBound(t *testing.T) {
	s := storetest.MustOpen(t)
	upsert(t, s, "o/a")
	other, err := store.Open(ctx, s.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()

	start := time.Now()
	before, err := s.Changed(ctx)
	if err != nil {
		t.Fatal(err)
	}
	upsert(t, other, "o/b")
	soon, _ := s.Changed(ctx)
	if time.Since(start) < store.ForeignWritesSeenWithin/2 && !soon.Equal(before) {
		// Well within the bound: the remembered value, no query.
		t.Errorf("Changed read the database again at once: %v, then %v", before, soon)
	}
	time.Sleep(store.ForeignWritesSeenWithin)
	after, _ := s.Changed(ctx)
	if !after.After(before) {
		t.Errorf("Changed after %v = %v, want after %v (the other store's write)", store.ForeignWritesSeenWithin, after, before)
	}
	if theirs, _ := other.Changed(ctx); !theirs.Equal(after) {
		t.Errorf("the two stores disagree: %v here, %v in the writer", after, theirs)
	}
}

// This store's own writes are seen at once, however soon after a read.
func TestChangedSeesItsOwnWriteAtOnce(t *testing.T) {
	s := storetest.MustOpen(t)
	prev, _ := s.Changed(ctx)
	for i, write := range []func(){
		func() { upsert(t, s, "o/a") },
		func() { record(t, s, "o/a", result("tpu", "pass", at(1))) },
		func() {
			if _, err := s.StartScan(ctx, store.Scan{}); err != nil {
				t.Fatal(err)
			}
		},
	} {
		write()
		now, err := s.Changed(ctx)
		if err != nil || !now.After(prev) {
			t.Errorf("write %d: Changed = %v, %v; want after %v", i, now, err, prev)
		}
		prev = now
	}
}

// Every transaction that touches (moves Changed) commits through
// SQLite.commit or commitAside, which tell Changed's memory: one that
// called tx.Commit itself would leave this process's pages stale for up to
// ForeignWritesSeenWithin.
func TestEveryTouchCommitsThroughCommit(t *testing.T) {
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	touching := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil || fn.Name.Name == "commit" || fn.Name.Name == "commitAside" {
				continue
			}
			calls := map[string]bool{}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok {
					if x, ok := sel.X.(*ast.Ident); ok {
						calls[x.Name+"."+sel.Sel.Name] = true
					}
				}
				return true
			})
			if !calls["s.touch"] {
				continue
			}
			touching++
			if calls["tx.Commit"] || !(calls["s.commit"] || calls["s.commitAside"]) {
				t.Errorf("%s: %s touches but does not commit through s.commit", fset.Position(fn.Pos()), fn.Name.Name)
			}
		}
	}
	if touching < 8 {
		t.Errorf("found %d functions that touch; the check is not looking where it should", touching)
	}
}

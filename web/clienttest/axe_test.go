//go:build clients

package clienttest

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/google-pytorch/torchtpu-scanner/internal/testenv"
)

// axeResult is what axe.run reports of each violated rule.
type axeResult struct {
	ID     string `json:"id"`
	Impact string `json:"impact"`
	Help   string `json:"help"`
	Nodes  []struct {
		Target []any `json:"target"`
	} `json:"nodes"`
}

// checkAxe runs axe-core in Debian's Chromium on every page kind, at 1440
// and 390 px wide, light and dark. A violation fails the check, except the
// known ones (knownAxe), which are reported.
func checkAxe(t *testing.T, dir string, s site) {
	chromium := os.Getenv("CHROMIUM")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	if _, err := os.Stat(chromium); err != nil {
		testenv.Missing(t, "axe needs Chromium at %s (scripts/chromium.sh installs it): %v", chromium, err)
	}
	axe, err := os.ReadFile(filepath.Join(dir, "node_modules", "axe-core", "axe.min.js"))
	if err != nil {
		t.Fatal(err)
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), chromedp.ExecPath(chromium),
		chromedp.Flag("headless", true), chromedp.Flag("no-sandbox", true), chromedp.Flag("disable-gpu", true),
		chromedp.Flag("no-first-run", true), chromedp.Flag("disable-background-networking", true),
		chromedp.UserDataDir(t.TempDir()))
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1440, 900)); err != nil {
		t.Fatalf("starting %s: %v", chromium, err)
	}
	pages, known := 0, map[string]int{}
	for _, scheme := range []string{"light", "dark"} {
		if _, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}}); err != nil {
			t.Fatal(err)
		}
		for _, width := range []int64{1440, 390} {
			for name, path := range s.pages() {
				sctx, scancel := context.WithTimeout(ctx, 60*time.Second)
				var raw string
				err := chromedp.Do(sctx, chromedp.EmulateViewport(width, 900), chromedp.Navigate(s.base+path),
					chromedp.WaitReady("body"), chromedp.Evaluate[chromedp.Void](string(axe)))
				if err == nil {
					raw, err = chromedp.Run(sctx, chromedp.Evaluate[string](
						`axe.run(document, {resultTypes: ["violations"]}).then(r => JSON.stringify(r.violations))`,
						chromedp.EvalAwaitPromise))
				}
				scancel()
				if err != nil {
					t.Fatalf("axe on %s (%d px, %s): %v", path, width, scheme, err)
				}
				var vs []axeResult
				if err := json.Unmarshal([]byte(raw), &vs); err != nil {
					t.Fatalf("axe's answer on %s: %v", path, err)
				}
				pages++
				for _, v := range vs {
					where := []string{}
					for _, n := range v.Nodes {
						b, _ := json.Marshal(n.Target)
						where = append(where, string(b))
					}
					if why, ok := knownAxe[v.ID]; ok {
						known[v.ID]++
						t.Logf("axe, known (%s): %s %d px %s: %s: %s at %s", why, name, width, scheme, v.ID, v.Help, strings.Join(where, " "))
						continue
					}
					t.Errorf("axe: %s (%s, %d px, %s): %s (%s): %s at %s", name, path, width, scheme, v.ID, v.Impact, v.Help, strings.Join(where, " "))
				}
			}
		}
	}
	t.Logf("axe: %d page views checked; known violations: %v", pages, known)
}

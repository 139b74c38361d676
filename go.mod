module github.com/google-pytorch/torchtpu-scanner

go 1.26.8

require (
	github.com/chromedp/cdproto v0.160.1
	github.com/chromedp/chromedp v0.23.1
	github.com/creack/pty v1.1.24
	github.com/gofiber/fiber/v2 v2.52.15
	github.com/landlock-lsm/go-landlock v0.11.2
	github.com/mattn/go-sqlite3 v1.14.53
	github.com/robfig/cron/v3 v3.0.1
	github.com/valyala/fasthttp v1.51.0
	golang.org/x/sys v0.49.0
)

require (
	github.com/andybalholm/brotli v1.1.0 // indirect
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/klauspost/compress v1.17.9 // indirect
	github.com/mattn/go-colorable v0.1.13 // indirect
	github.com/mattn/go-isatty v0.0.20 // indirect
	github.com/mattn/go-runewidth v0.0.16 // indirect
	github.com/rivo/uniseg v0.2.0 // indirect
	github.com/valyala/bytebufferpool v1.0.0 // indirect
	github.com/valyala/tcplisten v1.0.0 // indirect
	kernel.org/pub/linux/libs/security/libcap/psx v1.2.78 // indirect
)

// Package benchserve starts the servers the benchmark programs
// (cmd/benchload, cmd/benchscale) time: any server on a loopback port, and
// the baseline both compare against, a bare fiber app with one handler.
package benchserve

import (
	"log"
	"net"

	"github.com/gofiber/fiber/v2"
)

// Serve starts listen on a loopback port and returns its base URL. A
// listen that fails is logged: the bench goes on, and its figures show the
// failure.
func Serve(listen func(net.Listener) error) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go func() {
		if err := listen(ln); err != nil {
			log.Print(err)
		}
	}()
	return "http://" + ln.Addr().String()
}

// Minimal serves the baseline, a bare fiber app whose one handler answers
// "ok" to every request, and returns its base URL and the app (for its
// shutdown).
func Minimal() (string, *fiber.App) {
	bare := fiber.New(fiber.Config{DisableStartupMessage: true})
	bare.Use(func(c *fiber.Ctx) error { return c.SendString("ok") })
	return Serve(bare.Listener), bare
}

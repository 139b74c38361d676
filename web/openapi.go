package web

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/gofiber/fiber/v2"
)

//go:embed openapi.json
var openapiJSON []byte

// loadOpenAPI checks the embedded OpenAPI document and drops the
// operations the server does not serve: the scan request without a
// ScanControl, the worker protocol without workers and their token, the
// test requests without a desk.
func loadOpenAPI(withScanRequests, withWork, withTestRequests bool) ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(openapiJSON, &doc); err != nil {
		return nil, fmt.Errorf("web: openapi.json: %w", err)
	}
	if withScanRequests && withWork && withTestRequests {
		return openapiJSON, nil
	}
	paths, _ := doc["paths"].(map[string]any)
	if scans, ok := paths["/api/v1/scans"].(map[string]any); ok && !withScanRequests {
		delete(scans, "post")
	}
	for p := range paths {
		if strings.HasPrefix(p, "/api/v1/work/") && !withWork || strings.HasPrefix(p, "/api/v1/requests") && !withTestRequests {
			delete(paths, p)
		}
	}
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("web: openapi.json: %w", err)
	}
	return out, nil
}

// apiOpenAPI serves GET /api/v1/openapi.json.
func (s *Server) apiOpenAPI(c *fiber.Ctx) error {
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSONCharsetUTF8)
	c.Set(fiber.HeaderCacheControl, "public, max-age=3600")
	return c.Send(s.openapi)
}

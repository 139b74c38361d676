package web

import (
	_ "embed"
	"encoding/json"
	"fmt"

	"github.com/gofiber/fiber/v2"
)

//go:embed openapi.json
var openapiJSON []byte

// loadOpenAPI checks the embedded OpenAPI document and drops the scan
// request operation when the server has no ScanControl (no such route).
func loadOpenAPI(withScanRequests bool) ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(openapiJSON, &doc); err != nil {
		return nil, fmt.Errorf("web: openapi.json: %w", err)
	}
	if withScanRequests {
		return openapiJSON, nil
	}
	paths, _ := doc["paths"].(map[string]any)
	if scans, ok := paths["/api/v1/scans"].(map[string]any); ok {
		delete(scans, "post")
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

package server

import (
	_ "embed"
	"net/http"
)

// openAPI describes the control plane; openapi_test.go checks it names
// every route and that it is valid JSON.
//
//go:embed openapi.json
var openAPI []byte

func (s *Server) handleOpenAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(openAPI)
}

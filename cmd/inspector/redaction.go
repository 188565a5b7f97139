package main

import (
	"path/filepath"

	"inspector/redact"
)

// openRedaction loads DATA-DIR/redaction.json: the user's redaction rules and the MCP
// switch.
func openRedaction(dataDir string) (*redact.Settings, error) {
	return redact.Open(filepath.Join(dataDir, redact.FileName))
}

// loadRedactor returns a Redactor with the default rules, the user's and extra.
func loadRedactor(dataDir string, extra []redact.Rule) (*redact.Redactor, error) {
	rs, err := openRedaction(dataDir)
	if err != nil {
		return nil, err
	}
	return rs.Redactor(extra, redact.Options{})
}

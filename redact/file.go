package redact

import (
	"inspector/internal/settings"
)

// FileName is the user's rules in the data directory.
const FileName = "redaction.json"

// Doc is the document of the rules file.
type Doc struct {
	Rules []Rule `json:"rules"`
	// MCPOff turns masking of MCP answers off (it is on by default).
	MCPOff bool `json:"mcp_off,omitempty"`
}

// Settings is the persisted rule set: DATA-DIR/redaction.json.
type Settings struct {
	set *settings.Set[Doc, Rule, *Doc]
}

var spec = settings.Spec[Doc, Rule, *Doc]{
	Name:     "redaction rule",
	Items:    func(d *Doc) *[]Rule { return &d.Rules },
	ID:       func(r *Rule) *int64 { return &r.ID },
	Validate: Validate,
	Compile:  func(d *Doc) (*Doc, error) { return d, nil },
}

// Open loads the rules file (missing: no user rules, MCP masking on). A file that does
// not parse, or holds an invalid rule, is an error naming the file and the rule.
func Open(path string) (*Settings, error) {
	s, err := settings.Open(path, spec)
	if err != nil {
		return nil, err
	}
	return &Settings{set: s}, nil
}

// Rules returns the user rules.
func (s *Settings) Rules() []Rule { return s.set.Items() }

// Add adds a rule and returns its id.
func (s *Settings) Add(r Rule) (int64, error) { return s.set.Add(r) }

// Remove deletes a rule.
func (s *Settings) Remove(id int64) error { return s.set.Remove(id) }

// MCP reports whether MCP answers are masked.
func (s *Settings) MCP() bool { return !s.set.Chain().MCPOff }

// SetMCP turns masking of MCP answers on or off, and saves it.
func (s *Settings) SetMCP(on bool) error {
	return s.set.Update(func(d *Doc) error { d.MCPOff = !on; return nil })
}

// OnChange registers f to run after every change.
func (s *Settings) OnChange(f func()) { s.set.OnChange(f) }

// Redactor returns a new Redactor with the defaults and the user rules, plus extra rules.
func (s *Settings) Redactor(extra []Rule, opts Options) (*Redactor, error) {
	return New(append(s.Rules(), extra...), opts)
}

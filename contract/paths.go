package contract

import (
	"regexp"
	"sort"
	"strings"
	"unicode"
)

// Segment kinds, from the most certain identifier to a plain word.
type segKind int

const (
	segWord   segKind = iota // letters only (and a few joiners): kept unless very many
	segSlug                  // mixed letters, digits, dashes: templated when many
	segInt                   // decimal number
	segUUID                  // UUID
	segHex                   // hex hash, 16+ digits
	segDate                  // YYYY-MM-DD
	segOpaque                // long token with digits and letters (base64-like ids)
)

// Thresholds for templating segments that do not look like identifiers: a place in the
// path is a parameter only once this many distinct values have been seen there.
const (
	SlugThreshold = 6
	WordThreshold = 24
)

var (
	intRe  = regexp.MustCompile(`^-?\d+$`)
	hexRe  = regexp.MustCompile(`^[0-9a-fA-F]{16,}$`)
	slugRe = regexp.MustCompile(`^[A-Za-z0-9]+([-_.][A-Za-z0-9]+)+$`)
)

func classify(seg string) segKind {
	switch {
	case intRe.MatchString(seg):
		return segInt
	case uuidRe.MatchString(seg):
		return segUUID
	case dateRe.MatchString(seg):
		return segDate
	case hexRe.MatchString(seg) && strings.ContainsAny(seg, "0123456789"):
		return segHex
	}
	letters, digits, other := 0, 0, 0
	for _, r := range seg {
		switch {
		case unicode.IsLetter(r):
			letters++
		case unicode.IsDigit(r):
			digits++
		default:
			other++
		}
	}
	if digits > 0 && letters > 0 && len(seg) >= 12 && other == 0 {
		return segOpaque
	}
	if digits > 0 || slugRe.MatchString(seg) {
		return segSlug
	}
	return segWord
}

// idLike kinds become parameters at once.
func (k segKind) idLike() bool { return k >= segInt }

// pathNode is one segment place in a host's path tree.
type pathNode struct {
	fixed map[string]*pathNode
	param *pathNode // the templated child, when any
	kinds map[segKind]int
	// ops are the operations whose path ends here, by method.
	ops map[string]*operation
	// Once a place has seen enough distinct slugs (or words), they were merged into
	// param, and later ones go there too.
	slugsCollapsed, wordsCollapsed bool
}

func newPathNode() *pathNode { return &pathNode{fixed: map[string]*pathNode{}} }

// child returns the node for seg under n, templating as the package comment says.
func (n *pathNode) child(seg string) *pathNode {
	k := classify(seg)
	if k.idLike() {
		return n.paramChild(k)
	}
	if c, ok := n.fixed[seg]; ok {
		return c
	}
	if (k == segWord && n.wordsCollapsed) || (k != segWord && n.slugsCollapsed) {
		return n.paramChild(k)
	}
	c := newPathNode()
	n.fixed[seg] = c
	if n.maybeCollapse() {
		if c2, ok := n.fixed[seg]; ok {
			return c2
		}
		return n.param
	}
	return c
}

func (n *pathNode) paramChild(k segKind) *pathNode {
	if n.param == nil {
		n.param = newPathNode()
		n.param.kinds = map[segKind]int{}
	}
	n.param.kinds[k]++
	return n.param
}

// maybeCollapse merges n's slug children into its parameter once there are
// SlugThreshold of them, and its word children too once there are WordThreshold; it
// reports whether it merged any.
func (n *pathNode) maybeCollapse() bool {
	var slugs, words []string
	for s := range n.fixed {
		if classify(s) == segWord {
			words = append(words, s)
		} else {
			slugs = append(slugs, s)
		}
	}
	var take []string
	if !n.slugsCollapsed && len(slugs) >= SlugThreshold {
		n.slugsCollapsed = true
		take = append(take, slugs...)
	}
	if !n.wordsCollapsed && len(words) >= WordThreshold {
		n.wordsCollapsed = true
		take = append(take, words...)
	}
	sort.Strings(take)
	for _, s := range take {
		c := n.fixed[s]
		delete(n.fixed, s)
		n.paramChild(classify(s)).absorb(c)
	}
	return len(take) > 0
}

// absorb merges o's subtree and operations into n.
func (n *pathNode) absorb(o *pathNode) {
	for s, c := range o.fixed {
		if mine, ok := n.fixed[s]; ok {
			mine.absorb(c)
		} else {
			n.fixed[s] = c
		}
	}
	if o.param != nil {
		if n.param == nil {
			n.param = o.param
		} else {
			for k, c := range o.param.kinds {
				n.param.kinds[k] += c
			}
			n.param.absorb(o.param)
		}
	}
	for m, op := range o.ops {
		if n.ops == nil {
			n.ops = map[string]*operation{}
		}
		if mine, ok := n.ops[m]; ok {
			mine.merge(op)
		} else {
			n.ops[m] = op
		}
	}
	n.slugsCollapsed = n.slugsCollapsed || o.slugsCollapsed
	n.wordsCollapsed = n.wordsCollapsed || o.wordsCollapsed
}

// paramSchema is the path parameter's type from the kinds seen there.
func (n *pathNode) paramType() (typ, format string) {
	only := func(k segKind) bool {
		for k2, c := range n.kinds {
			if k2 != k && c > 0 {
				return false
			}
		}
		return true
	}
	switch {
	case only(segInt):
		return "integer", ""
	case only(segUUID):
		return "string", "uuid"
	case only(segDate):
		return "string", "date"
	}
	return "string", ""
}

// singular makes a parameter name from the segment before it: users -> userId.
func paramName(prev string, used map[string]bool) string {
	base := "id"
	if prev != "" && !strings.HasPrefix(prev, "{") {
		w := strings.Map(func(r rune) rune {
			if unicode.IsLetter(r) || unicode.IsDigit(r) {
				return r
			}
			return -1
		}, prev)
		w = strings.TrimSuffix(w, "s")
		if strings.HasSuffix(w, "ie") {
			w = strings.TrimSuffix(w, "ie") + "y"
		}
		if w != "" {
			base = lowerFirst(w) + "Id"
		}
	}
	name := base
	for i := 2; used[name]; i++ {
		name = base + itoa(i)
	}
	used[name] = true
	return name
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	r := []rune(s)
	r[0] = unicode.ToLower(r[0])
	return string(r)
}

func itoa(i int) string {
	const d = "0123456789"
	if i < 10 {
		return d[i : i+1]
	}
	return itoa(i/10) + d[i%10:i%10+1]
}

// splitPath splits a URL path into segments ("/" is none).
func splitPath(p string) []string {
	p = strings.Trim(p, "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

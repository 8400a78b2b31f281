package routestest

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
)

// request is what haproxy's routing looks at here: the method and the path, without the query.
type request struct{ method, path string }

// Route follows a request into the frontend bound to port as haproxy would, and returns the
// backend it reaches: "" when haproxy answers it itself (a deny, a redirect, monitor-uri, the
// stats page) or the frontend has no backend. An error names a construct this package cannot
// evaluate: extend the package rather than guess where such a request goes.
func (c HAProxy) Route(port, method, path string) (string, error) {
	fronts := c.Frontends(port)
	if len(fronts) != 1 {
		return "", fmt.Errorf("haproxy port %s: bound by frontends %v; want one", port, fronts)
	}
	return c.FrontendRoute(fronts[0], method, path)
}

// FrontendRoute is Route for the frontend named frontend. haproxy runs a frontend's
// http-request rules in order (allow ends them, deny and the like answer the request), then its
// redirect rules, then the first use_backend whose condition holds, then default_backend (the
// frontend's or the defaults section's).
func (c HAProxy) FrontendRoute(frontend, method, path string) (string, error) {
	f, err := c.frontend(frontend)
	if err != nil {
		return "", err
	}
	req := request{method: method, path: path}
	if f.intercepts(req) {
		return "", nil
	}
	answered, err := f.httpRequestAnswers(req)
	if answered || err != nil {
		return "", err
	}
	for _, l := range c.Lines(f.section, "redirect") {
		if ok, err := f.holds(l, req); ok || err != nil {
			return "", err
		}
	}
	for _, l := range c.Lines(f.section, "use_backend") {
		if len(l) < 2 || strings.Contains(l[1], "%[") {
			return "", fmt.Errorf("%s: %q: only a named backend can be followed", f.section, strings.Join(l, " "))
		}
		if ok, err := f.holds(l, req); ok || err != nil {
			return l[1], err
		}
	}
	return f.defaultBackend()
}

// frontend is one frontend section with its named ACLs.
type frontend struct {
	cfg     HAProxy
	section string
	acls    map[string][][]string // name -> the criteria of each "acl name ..." line, ORed
}

// frontendKeywords are the frontend keywords that Route understands or that cannot change where
// a request goes. Any other keyword (tcp-request, http-request set-path, ...) is an error.
var frontendKeywords = map[string]bool{
	"acl": true, "bind": true, "mode": true, "log": true, "option": true, "no": true,
	"timeout": true, "maxconn": true, "description": true, "capture": true, "errorfile": true,
	"default_backend": true, "use_backend": true, "http-request": true, "redirect": true,
	"monitor-uri": true, "stats": true, "http-response": true, "http-after-response": true,
}

func (c HAProxy) frontend(name string) (*frontend, error) {
	section := "frontend " + name
	lines, ok := c[section]
	if !ok {
		return nil, fmt.Errorf("haproxy has no %s", section)
	}
	f := &frontend{cfg: c, section: section, acls: map[string][][]string{}}
	for _, l := range lines {
		if !frontendKeywords[l[0]] {
			return nil, fmt.Errorf("%s: %q may change where a request goes, and routestest cannot follow it", section, strings.Join(l, " "))
		}
		if l[0] == "acl" {
			if len(l) < 3 {
				return nil, fmt.Errorf("%s: %q: an acl needs a name and a criterion", section, strings.Join(l, " "))
			}
			f.acls[l[1]] = append(f.acls[l[1]], l[2:])
		}
	}
	return f, nil
}

// intercepts reports whether haproxy answers req itself: its monitor-uri, or its stats page
// (served at every path that begins with the stats uri).
func (f *frontend) intercepts(req request) bool {
	if uri := f.cfg.Value(f.section, "monitor-uri"); uri != "" && req.path == uri {
		return true
	}
	if len(f.cfg.Lines(f.section, "stats", "enable")) == 0 {
		return false
	}
	uri := f.cfg.Value(f.section, "stats", "uri")
	if uri == "" {
		uri = "/haproxy?stats"
	}
	return strings.HasPrefix(req.path, uri)
}

// httpRequestActions are the http-request actions Route follows: whether each answers the
// request itself (true) or lets it go on (false). "allow" lets it go on and skips the rest.
var httpRequestActions = map[string]bool{
	"deny": true, "reject": true, "tarpit": true, "return": true, "redirect": true, "auth": true,
	"allow": false, "set-header": false, "add-header": false, "del-header": false,
	"set-var": false, "unset-var": false, "set-log-level": false, "capture": false,
}

// httpRequestAnswers runs the http-request rules in order and reports whether one answers req.
func (f *frontend) httpRequestAnswers(req request) (bool, error) {
	for _, l := range f.cfg.Lines(f.section, "http-request") {
		if len(l) < 2 {
			return false, fmt.Errorf("%s: %q has no action", f.section, strings.Join(l, " "))
		}
		answers, known := httpRequestActions[l[1]]
		if !known {
			return false, fmt.Errorf("%s: %q: routestest cannot follow http-request %s", f.section, strings.Join(l, " "), l[1])
		}
		ok, err := f.holds(l, req)
		if err != nil {
			return false, err
		}
		if ok && (answers || l[1] == "allow") {
			return answers, nil
		}
	}
	return false, nil
}

func (f *frontend) defaultBackend() (string, error) {
	if b := f.cfg.Value(f.section, "default_backend"); b != "" {
		return b, nil
	}
	defaults := f.cfg.Sections("defaults")
	if _, plain := f.cfg["defaults"]; plain {
		defaults = append(defaults, "")
	}
	switch len(defaults) {
	case 0:
		return "", nil
	case 1:
		section := strings.TrimSpace("defaults " + defaults[0])
		return f.cfg.Value(section, "default_backend"), nil
	default:
		return "", fmt.Errorf("haproxy has %d defaults sections; routestest follows one", len(defaults))
	}
}

// holds reports whether the condition at the end of a rule line ("... if cond", "... unless
// cond") holds for req; a line without one always applies.
func (f *frontend) holds(line []string, req request) (bool, error) {
	for i, w := range line {
		if w == "if" || w == "unless" {
			ok, err := f.condition(line[i+1:], req)
			return ok == (w == "if"), err
		}
	}
	return true, nil
}

// condition evaluates ACL terms: terms side by side must all hold (AND), "||" or "or" separates
// alternatives, "!" negates a term, and "{ criterion values }" is an anonymous ACL.
func (f *frontend) condition(words []string, req request) (bool, error) {
	if len(words) == 0 {
		return false, fmt.Errorf("%s: an empty condition", f.section)
	}
	alt, all := false, true // an earlier alternative held; every term of this one holds
	for len(words) > 0 {
		w := words[0]
		if w == "||" || w == "or" {
			alt, all = alt || all, true
			words = words[1:]
			continue
		}
		neg := false
		if w == "!" {
			neg, words = true, words[1:]
		} else if name, ok := strings.CutPrefix(w, "!"); ok {
			// A copy: words belongs to the parsed configuration.
			neg, words = true, append([]string{name}, words[1:]...)
		}
		v, rest, err := f.term(words, req)
		if err != nil {
			return false, err
		}
		all = all && v != neg
		words = rest
	}
	return alt || all, nil
}

// term evaluates the ACL at the start of words and returns the words after it.
func (f *frontend) term(words []string, req request) (bool, []string, error) {
	if len(words) == 0 {
		return false, nil, fmt.Errorf("%s: a condition ends in a negation", f.section)
	}
	if words[0] == "{" {
		for i, w := range words {
			if w == "}" {
				v, err := matchACL(words[1:i], req)
				return v, words[i+1:], err
			}
		}
		return false, nil, fmt.Errorf("%s: an anonymous ACL is not closed", f.section)
	}
	name := words[0]
	if v, ok := predefinedACL(name, req); ok {
		return v, words[1:], nil
	}
	criteria, ok := f.acls[name]
	if !ok {
		return false, nil, fmt.Errorf("%s: acl %s is not defined", f.section, name)
	}
	for _, c := range criteria {
		v, err := matchACL(c, req)
		if v || err != nil {
			return v, words[1:], err
		}
	}
	return false, words[1:], nil
}

// predefinedACL evaluates haproxy's built-in ACLs that concern routing.
func predefinedACL(name string, req request) (v, ok bool) {
	switch name {
	case "TRUE", "HTTP":
		return true, true
	case "FALSE":
		return false, true
	case "METH_GET":
		return req.method == "GET" || req.method == "HEAD", true
	}
	if m, isMethod := strings.CutPrefix(name, "METH_"); isMethod {
		return req.method == m, true
	}
	return false, false
}

// fetchMatch is the match method each sample fetch implies ("path_beg" is "path -m beg").
var fetchMatch = map[string]struct{ sample, match string }{
	"path": {"path", "str"}, "path_beg": {"path", "beg"}, "path_end": {"path", "end"},
	"path_dir": {"path", "dir"}, "path_sub": {"path", "sub"}, "path_reg": {"path", "reg"},
	"url": {"path", "str"}, "url_beg": {"path", "beg"}, "method": {"method", "str"},
}

// matchACL evaluates one ACL criterion: "fetch[,converter...] [flags] values...".
func matchACL(words []string, req request) (bool, error) {
	if len(words) == 0 {
		return false, fmt.Errorf("an ACL without a criterion")
	}
	fetch, convs, _ := strings.Cut(words[0], ",")
	fm, ok := fetchMatch[fetch]
	if !ok {
		return false, fmt.Errorf("acl criterion %s: routestest cannot evaluate it", words[0])
	}
	sample := req.path
	if fm.sample == "method" {
		sample = req.method
	}
	sample, err := convert(sample, convs)
	if err != nil {
		return false, err
	}
	match, icase, values, err := aclFlags(fm.match, words[1:])
	if err != nil {
		return false, err
	}
	for _, v := range values {
		if ok, err := matches(match, sample, v, icase); ok || err != nil {
			return ok, err
		}
	}
	return false, nil
}

// convert applies the converters of a criterion ("url_dec,lower") to a sample.
func convert(sample, convs string) (string, error) {
	if convs == "" {
		return sample, nil
	}
	for _, c := range strings.Split(convs, ",") {
		switch c {
		case "url_dec":
			dec, err := url.PathUnescape(sample)
			if err != nil {
				return "", fmt.Errorf("url_dec %q: %w", sample, err)
			}
			sample = dec
		case "lower":
			sample = strings.ToLower(sample)
		default:
			return "", fmt.Errorf("acl converter %s: routestest cannot evaluate it", c)
		}
	}
	return sample, nil
}

// aclFlags reads the flags before an ACL's values: -i (ignore case), -m <method>, -n, --.
func aclFlags(match string, words []string) (string, bool, []string, error) {
	icase := false
	for len(words) > 0 && strings.HasPrefix(words[0], "-") {
		switch words[0] {
		case "-i":
			icase = true
		case "-n":
		case "--":
			return match, icase, words[1:], nil
		case "-m":
			if len(words) < 2 {
				return "", false, nil, fmt.Errorf("acl flag -m without a method")
			}
			match, words = words[1], words[1:]
		default:
			return "", false, nil, fmt.Errorf("acl flag %s: routestest cannot evaluate it", words[0])
		}
		words = words[1:]
	}
	return match, icase, words, nil
}

// matches applies one haproxy match method to a sample and a pattern.
func matches(match, sample, pattern string, icase bool) (bool, error) {
	if icase {
		sample, pattern = strings.ToLower(sample), strings.ToLower(pattern)
	}
	switch match {
	case "str":
		return sample == pattern, nil
	case "beg":
		return strings.HasPrefix(sample, pattern), nil
	case "end":
		return strings.HasSuffix(sample, pattern), nil
	case "sub":
		return strings.Contains(sample, pattern), nil
	case "dir":
		return matchDir(sample, pattern), nil
	case "found":
		return true, nil
	case "reg":
		re, err := regexp.Compile(pattern)
		if err != nil {
			return false, fmt.Errorf("acl regex %q: %w", pattern, err)
		}
		return re.MatchString(sample), nil
	}
	return false, fmt.Errorf("acl match -m %s: routestest cannot evaluate it", match)
}

// matchDir is haproxy's "-m dir": pattern, without its leading and trailing slashes, occurs in
// sample starting at the beginning or after a delimiter ("/" or "?") and ending at the end or
// before one, as haproxy's match_word does.
func matchDir(sample, pattern string) bool {
	isDelim := func(c byte) bool { return c == '/' || c == '?' }
	pattern = strings.Trim(pattern, "/?")
	for i := 0; i+len(pattern) <= len(sample); i++ {
		if i > 0 && !isDelim(sample[i-1]) {
			continue
		}
		end := i + len(pattern)
		if sample[i:end] == pattern && (end == len(sample) || isDelim(sample[end])) {
			return true
		}
	}
	return false
}

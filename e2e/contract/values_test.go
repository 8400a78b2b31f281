package contract

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"pgregory.net/rapid"
)

// shown is a drawn string that rapid logs shortened: a hostile value of 8 KB would otherwise
// fill a failure's log.
type shown string

// GoString is how rapid logs a drawn string.
func (s shown) GoString() string { return shorten(string(s), 100) }

// value is one value of a parameter as it goes on the wire. A raw value goes into the query
// unescaped: a broken escape (%zz) or a semicolon must reach the server as sent.
type value struct {
	s   string
	raw bool
}

// fixtures are the names the draws share: a few post ids, so that reads meet posts with likes
// and reactions, and the users of the sessions the fuzzer holds. The schema gives a parameter's
// type; these make a valid draw land on data that exists.
type fixtures struct {
	posts []string
	users []string
	kinds []string // the writer's reaction kinds
	now   time.Time
}

// role is how a draw treats one parameter. A request with several hostile parameters is refused
// for the first one the server checks, and the others go untested: so most draws make one
// parameter hostile and the others valid or absent, and the rest draw each parameter freely.
type role int

const (
	free    role = iota // absent, valid, hostile or repeated, each parameter on its own
	hostile             // hostile, or repeated
	tame                // valid, or absent
)

// How a free parameter is drawn, out of 100: absent, valid for its schema, hostile, or repeated.
// Shrinking moves a failing draw towards absent, then valid: the smallest failing request.
const (
	modeAbsent   = 8
	modeValid    = 40
	modeHostile  = 94
	modeRepeated = 100
)

// drawParam draws what p gets in role r: nil (absent), one value, or several (the parameter
// repeated, ?to=1&to=2). Path parameters are always present and never empty or raw: a request
// whose path does not match the operation's template tests the router, not the operation.
func drawParam(t *rapid.T, p *openapi3.Parameter, fx *fixtures, r role) []value {
	label := p.In + " " + p.Name
	var mode int
	switch r {
	case hostile:
		mode = modeValid + rapid.IntRange(0, 9).Draw(t, label+" hostile mode")*(modeRepeated-modeValid)/10
	case tame:
		mode = rapid.IntRange(0, 9).Draw(t, label+" tame mode") * modeValid / 10
	default:
		mode = rapid.IntRange(0, modeRepeated-1).Draw(t, label+" mode")
	}
	isPath := p.In == openapi3.ParameterInPath
	switch {
	case mode < modeAbsent && !isPath:
		return nil
	case mode < modeValid:
		return serialize(p, validValue(t, p, schemaOf(p), fx, label))
	case mode < modeHostile || isPath:
		v := hostileValue(t, p, schemaOf(p), fx, label)
		if isPath && (v.s == "" || v.raw) {
			v = value{s: "x" + v.s}
		}
		return []value{v}
	default:
		n := rapid.IntRange(2, 4).Draw(t, label+" repeats")
		var out []value
		for i := range n {
			if rapid.Bool().Draw(t, fmt.Sprintf("%s repeat %d hostile", label, i)) {
				out = append(out, hostileValue(t, p, schemaOf(p), fx, label))
			} else {
				out = append(out, serialize(p, validValue(t, p, schemaOf(p), fx, label))...)
			}
		}
		return out
	}
}

func schemaOf(p *openapi3.Parameter) *openapi3.Schema {
	if p.Schema != nil && p.Schema.Value != nil {
		return p.Schema.Value
	}
	for _, mt := range p.Content {
		if mt.Schema != nil && mt.Schema.Value != nil {
			return mt.Schema.Value
		}
	}
	return &openapi3.Schema{}
}

// serialize turns the items of a valid draw into wire values: an array in form style with
// explode (the default) repeats the parameter, without explode it is one comma-separated value.
func serialize(p *openapi3.Parameter, items []string) []value {
	s := schemaOf(p)
	if !s.Type.Is(openapi3.TypeArray) {
		return []value{{s: strings.Join(items, ",")}}
	}
	if p.Explode != nil && !*p.Explode || p.In == openapi3.ParameterInPath || p.In == openapi3.ParameterInHeader {
		return []value{{s: strings.Join(items, ",")}}
	}
	out := make([]value, len(items))
	for i, it := range items {
		out[i] = value{s: it}
	}
	return out
}

// validValue draws a value its schema allows: one of its examples or enum values, or one of its
// type within its bounds; a post or user id from the fixtures for parameters that name one. An
// array gives its items.
func validValue(t *rapid.T, p *openapi3.Parameter, s *openapi3.Schema, fx *fixtures, label string) []string {
	if ex := examples(p, s); len(ex) > 0 && rapid.IntRange(0, 3).Draw(t, label+" example?") == 0 {
		return []string{rapid.SampledFrom(ex).Draw(t, label+" example")}
	}
	if len(s.Enum) > 0 {
		return []string{fmt.Sprint(rapid.SampledFrom(s.Enum).Draw(t, label+" enum"))}
	}
	if alts := append(append([]*openapi3.SchemaRef{}, s.OneOf...), s.AnyOf...); len(alts) > 0 {
		i := rapid.IntRange(0, len(alts)-1).Draw(t, label+" branch")
		if alts[i].Value != nil {
			return validValue(t, p, alts[i].Value, fx, label)
		}
	}
	if pool := fx.pool(p.Name); pool != nil && !s.Type.Is(openapi3.TypeArray) && rapid.IntRange(0, 3).Draw(t, label+" fixture?") > 0 {
		return []string{rapid.SampledFrom(pool).Draw(t, label+" fixture")}
	}
	typ := ""
	if s.Type != nil && len(s.Type.Slice()) > 0 {
		types := s.Type.Slice()
		typ = types[rapid.IntRange(0, len(types)-1).Draw(t, label+" type")]
	}
	switch typ {
	case openapi3.TypeInteger:
		lo, hi := intBounds(s)
		return []string{strconv.FormatInt(rapid.Int64Range(lo, hi).Draw(t, label+" int"), 10)}
	case openapi3.TypeNumber:
		lo, hi := intBounds(s)
		return []string{strconv.FormatFloat(rapid.Float64Range(float64(lo), float64(hi)).Draw(t, label+" number"), 'g', -1, 64)}
	case openapi3.TypeBoolean:
		return []string{strconv.FormatBool(rapid.Bool().Draw(t, label+" bool"))}
	case openapi3.TypeArray:
		return validItems(t, p, s, fx, label)
	}
	return []string{validString(t, s, fx, label)}
}

// validItems draws an array's items, each valid for the items' schema, as many as it allows.
func validItems(t *rapid.T, p *openapi3.Parameter, s *openapi3.Schema, fx *fixtures, label string) []string {
	most := 8
	if s.MaxItems != nil {
		most = int(min(*s.MaxItems, 200))
	}
	least := int(min(s.MinItems, uint64(most)))
	n := rapid.IntRange(least, most).Draw(t, label+" items")
	item := &openapi3.Schema{}
	if s.Items != nil && s.Items.Value != nil {
		item = s.Items.Value
	}
	// The items of a list of post ids are post ids: the fixtures name them by the list's name.
	ip := &openapi3.Parameter{Name: p.Name + "[]", In: p.In}
	out := make([]string, n)
	for i := range out {
		out[i] = strings.Join(validValue(t, ip, item, fx, fmt.Sprintf("%s[%d]", label, i)), ",")
	}
	return out
}

// validString draws a string the schema allows: a time for a date-time, one matching its pattern,
// or one within its length bounds.
func validString(t *rapid.T, s *openapi3.Schema, fx *fixtures, label string) string {
	switch {
	case s.Format == "date-time":
		off := rapid.Int64Range(-7*3600, 3600).Draw(t, label+" time offset s")
		return fx.now.Add(time.Duration(off) * time.Second).UTC().Format(time.RFC3339)
	case s.Pattern != "":
		return rapid.StringMatching(s.Pattern).Draw(t, label+" pattern")
	}
	most := 32
	if s.MaxLength != nil {
		most = int(min(*s.MaxLength, 256))
	}
	return rapid.StringN(int(min(s.MinLength, uint64(most))), most, -1).Draw(t, label+" string")
}

// intBounds are the schema's integer bounds, within ±2^20 where it sets none: a valid value the
// services can use, the extremes being the hostile draws' business.
func intBounds(s *openapi3.Schema) (lo, hi int64) {
	lo, hi = -1<<20, 1<<20
	if s.Min != nil {
		lo = int64(max(*s.Min, math.MinInt64/2))
		if s.ExclusiveMin.IsTrue() {
			lo++
		}
	}
	if s.Max != nil {
		hi = int64(min(*s.Max, math.MaxInt64/2))
		if s.ExclusiveMax.IsTrue() {
			hi--
		}
	}
	if hi < lo {
		hi = lo
	}
	return lo, hi
}

// examples are the parameter's and its schema's examples, as strings.
func examples(p *openapi3.Parameter, s *openapi3.Schema) []string {
	var out []string
	add := func(v any) {
		switch v := v.(type) {
		case nil:
		case []any:
			parts := make([]string, len(v))
			for i, e := range v {
				parts[i] = fmt.Sprint(e)
			}
			out = append(out, strings.Join(parts, ","))
		case float64:
			out = append(out, strconv.FormatFloat(v, 'f', -1, 64))
		default:
			out = append(out, fmt.Sprint(v))
		}
	}
	add(p.Example)
	for _, ex := range p.Examples {
		if ex != nil && ex.Value != nil {
			add(ex.Value.Value)
		}
	}
	add(s.Example)
	for _, ex := range s.Examples {
		add(ex)
	}
	return out
}

// pool returns the fixture ids for a parameter that names posts or users, nil for others; the
// times around now for a range's ends.
func (fx *fixtures) pool(name string) []string {
	n := strings.ToLower(strings.TrimSuffix(name, "[]"))
	switch {
	case strings.Contains(n, "post"):
		return fx.posts
	case strings.Contains(n, "user"):
		return fx.users
	case n == "kind":
		return fx.kinds
	case n == "from" || n == "to" || n == "since" || n == "until":
		now := fx.now.Unix()
		return []string{strconv.FormatInt(now-3600, 10), strconv.FormatInt(now-60, 10), strconv.FormatInt(now+1, 10),
			fx.now.Add(-time.Hour).UTC().Format(time.RFC3339), fx.now.Add(time.Minute).UTC().Format(time.RFC3339)}
	}
	return nil
}

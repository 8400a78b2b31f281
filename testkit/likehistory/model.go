package likehistory

import (
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// set is the model's state of one post: its likers, sorted, joined by NULs (ids never hold one),
// so that states compare and hash as strings and a step never mutates the state it was given.
type set string

func (s set) members() []string {
	if s == "" {
		return nil
	}
	return strings.Split(string(s), "\x00")
}

func (s set) has(u string) bool { return slices.Contains(s.members(), u) }

func (s set) size() int64 { return int64(len(s.members())) }

func (s set) with(u string) set {
	if s.has(u) {
		return s
	}
	m := append(s.members(), u)
	sort.Strings(m)
	return set(strings.Join(m, "\x00"))
}

func (s set) without(u string) set {
	m := slices.DeleteFunc(s.members(), func(x string) bool { return x == u })
	return set(strings.Join(m, "\x00"))
}

func setOf(users []string) set {
	m := slices.Clone(users)
	sort.Strings(m)
	return set(strings.Join(slices.Compact(m), "\x00"))
}

// step is the sequential specification of one post: every state the post may be in after op,
// from s; none when op's answer is impossible from s.
func step(s set, op Op) []set {
	switch op.Outcome {
	case Fail:
		return []set{s} // a refusal promises nothing changed
	case Unknown:
		switch op.Kind {
		case Like:
			return []set{s, s.with(op.User)}
		case Unlike:
			return []set{s, s.without(op.User)}
		}
		return []set{s} // a read that never answered changed nothing
	}
	switch op.Kind {
	case Like, Unlike:
		next := s.with(op.User)
		if op.Kind == Unlike {
			next = s.without(op.User)
		}
		if op.Kind == Like && op.Changed != (next != s) || op.Count != next.size() {
			return nil
		}
		return []set{next}
	case Count:
		if op.Count != s.size() {
			return nil
		}
		return []set{s}
	case Likers:
		if setOf(op.Users) != s {
			return nil
		}
		return []set{s}
	}
	return nil
}

// model is porcupine's model of the service: one independent set per post.
var model = porcupine.NondeterministicModel{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byPost := map[string][]porcupine.Operation{}
		var posts []string
		for _, o := range history {
			p := o.Input.(Op).Post
			if _, ok := byPost[p]; !ok {
				posts = append(posts, p)
			}
			byPost[p] = append(byPost[p], o)
		}
		out := make([][]porcupine.Operation, 0, len(posts))
		for _, p := range posts {
			out = append(out, byPost[p])
		}
		return out
	},
	Init: func() []any { return []any{set("")} },
	Step: func(state, input, _ any) []any {
		var out []any
		for _, s := range step(state.(set), input.(Op)) {
			out = append(out, s)
		}
		return out
	},
	Hash: func(state any) uint64 {
		h := fnv.New64a()
		_, _ = io.WriteString(h, string(state.(set)))
		return h.Sum64()
	},
	DescribeOperation: func(input, _ any) string { return describe(input.(Op)) },
	DescribeState:     func(state any) string { return "{" + strings.Join(state.(set).members(), ",") + "}" },
}

func describe(op Op) string {
	s := fmt.Sprintf("%s(%s", op.Kind, op.Post)
	if op.User != "" {
		s += ", " + op.User
	}
	s += ") " + op.Outcome.String()
	if op.Outcome == OK {
		switch op.Kind {
		case Like, Unlike:
			s += fmt.Sprintf(" changed=%v count=%d", op.Changed, op.Count)
		case Count:
			s += fmt.Sprintf(" %d", op.Count)
		case Likers:
			s += " {" + strings.Join(op.Users, ",") + "}"
		}
	}
	return s
}

// Result is a check's verdict.
type Result struct {
	OK bool
	// Why is what failed, when not OK: a final-state finding, or the linearizability check's.
	Why  string
	info porcupine.LinearizationInfo
}

// Check checks a history: porcupine's linearizability check of every post against the model,
// within timeout (a check that runs out is not a pass). Operations with an Unknown outcome are
// open-ended: they may take effect at any time after their call, as porcupine expects of them.
func Check(ops []Op, timeout time.Duration) Result {
	hist := make([]porcupine.Operation, len(ops))
	for i, op := range ops {
		end := op.End
		if op.Outcome == Unknown {
			end = math.MaxInt64
		}
		hist[i] = porcupine.Operation{ClientId: op.Client, Input: op, Call: op.Call, Return: end}
	}
	res, info := porcupine.CheckOperationsVerbose(model.ToModel(), hist, timeout)
	switch res {
	case porcupine.Ok:
		return Result{OK: true, info: info}
	case porcupine.Unknown:
		return Result{Why: fmt.Sprintf("the linearizability check ran out of its %v", timeout), info: info}
	}
	return Result{Why: "not linearizable: no order of the operations explains every answer (see the visualisation)", info: info}
}

// Visualize writes porcupine's HTML page of the checked history to path: each post's operations on
// a timeline, and for a failing one the longest linearizable prefix and where it breaks.
func (r Result) Visualize(path string) error {
	return porcupine.VisualizePath(model.ToModel(), r.info, path)
}

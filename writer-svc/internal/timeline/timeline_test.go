package timeline

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/likes/likes/pkg/rediskeys"
	"github.com/likes/likes/testkit/redistest"
	"github.com/likes/likes/writer-svc/internal/store"
)

var keys = rediskeys.New("tl-test:")

// TestTheLikeScriptWritesTheTimeline: a batch of likes, an unlike and reactions lands in the
// second it ran, each series on its own, with the minute's keys expiring the retention after the
// minute; a batch that changes nothing adds nothing.
func TestTheLikeScriptWritesTheTimeline(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	st := store.New(rdb, keys, store.Options{TimelineRetention: time.Hour})
	before := time.Now().Unix()
	if _, err := st.Apply(ctx, "talk", []store.Change{{User: "a"}, {User: "b"}, {User: "c"}, {User: "c", Unlike: true},
		{User: "a", Kind: "clap"}, {User: "b", Kind: "clap"}, {User: "c", Kind: "wow"}, {User: "a", Kind: "wow"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Apply(ctx, "talk", []store.Change{{User: "a"}, {User: "z", Unlike: true}}); err != nil { // changes nothing
		t.Fatal(err)
	}
	after := time.Now().Unix() + 1
	tl, err := NewReader(rdb, keys, []string{"clap", "wow", "boo"}).Read(ctx, "talk", before, after, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{Likes: 3, Unlikes: 1, "clap": 2, "wow": 1, "boo": 0} // a's wow was refused by its gate
	for name, n := range want {
		if got := sum(tl.Series[name]); got != n || len(tl.Series[name]) != int(after-before) {
			t.Errorf("series %s: %v (sum %d); want %d over %d steps", name, tl.Series[name], got, n, after-before)
		}
	}
	if len(tl.Peaks) != 1 || tl.Peaks[0].Likes != 3 || tl.Peaks[0].Reactions != 3 {
		t.Errorf("peaks %+v; want one, 3 likes and 3 reactions", tl.Peaks)
	}
	minute := tl.Peaks[0].T / 60
	for _, s := range []string{rediskeys.TimelineLikes, rediskeys.TimelineUnlikes, "clap", "wow"} {
		exp, err := rdb.ExpireTime(ctx, keys.Timeline("talk", s, minute)).Result()
		if want := time.Duration((minute+1)*60+3600) * time.Second; err != nil || exp != want {
			t.Errorf("series %s's minute expires at %v, %v; want the minute's end + 1h (%v)", s, exp, err, want)
		}
	}
	if n := rdb.Exists(ctx, keys.Timeline("talk", "boo", minute)).Val(); n != 0 {
		t.Error("a kind nobody reacted with has a timeline key")
	}
}

// TestReadSumsStepsAcrossMinutes: seconds written in several minutes read back summed into steps
// that cross minutes, only the seconds asked for, with the busiest steps as peaks.
func TestReadSumsStepsAcrossMinutes(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	const hour = int64(490000) // 2025-11-24 16:00 UTC
	add := func(series string, second, n int64) {
		m := second / 60
		if err := rdb.Do(ctx, "BITFIELD", keys.Timeline("p", series, m), "INCRBY", "u32", "#"+strconv.FormatInt(second-m*60, 10), n).Err(); err != nil {
			t.Fatal(err)
		}
	}
	end := (hour + 1) * 3600
	add(rediskeys.TimelineLikes, end-61, 5)  // step [end-120, end-30)
	add(rediskeys.TimelineLikes, end-1, 2)   // step [end-30, end+60)
	add("clap", end, 7)                      // the same step, the next hour
	add("clap", end+59, 1)                   // the same step
	add(rediskeys.TimelineLikes, end+60, 9)  // outside the range read
	add(rediskeys.TimelineLikes, end-121, 4) // outside too
	tl, err := NewReader(rdb, keys, []string{"clap"}).Read(ctx, "p", end-120, end+60, 90)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := tl.Series[Likes], []int64{5, 2}; !slices.Equal(got, want) {
		t.Errorf("likes %v; want %v", got, want)
	}
	if got, want := tl.Series["clap"], []int64{0, 8}; !slices.Equal(got, want) {
		t.Errorf("clap %v; want %v", got, want)
	}
	want := []Peak{{T: end - 30, Likes: 2, Reactions: 8}, {T: end - 120, Likes: 5}}
	if !slices.Equal(tl.Peaks, want) {
		t.Errorf("peaks %+v; want %+v", tl.Peaks, want)
	}
}

// TestTimelineRoute: JSON by default, CSV on request, clear 400s for every query it does not
// take, and a 503 with Retry-After when Redis is down.
func TestTimelineRoute(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	now := time.Unix(1764950000, 0)
	second := now.Unix()
	if err := rdb.Do(context.Background(), "BITFIELD", keys.Timeline("talk", "clap", second/60), "INCRBY", "u32", "#"+strconv.FormatInt(second%60, 10), 3).Err(); err != nil {
		t.Fatal(err)
	}
	h := NewHandler(Options{Reader: NewReader(rdb, keys, []string{"clap"}), Timeout: 2 * time.Second, Now: func() time.Time { return now }})
	r := chi.NewRouter()
	h.Routes(r)
	ts := httptest.NewServer(r)
	t.Cleanup(ts.Close)
	get := func(path string, header ...string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, ts.URL+path, nil)
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}

	resp, body := get("/posts/talk/timeline")
	var tl Timeline
	if err := json.Unmarshal([]byte(body), &tl); resp.StatusCode != http.StatusOK || err != nil {
		t.Fatalf("default: %d %s, %v", resp.StatusCode, body, err)
	}
	if tl.To != second+1 || tl.From != tl.To-3600 || tl.Step != 6 || len(tl.Series["clap"]) != 600 || sum(tl.Series["clap"]) != 3 {
		t.Errorf("default: from %d to %d step %d, %d clap steps summing %d; want the last hour to now in 600 steps of 6 s, 3 claps",
			tl.From, tl.To, tl.Step, len(tl.Series["clap"]), sum(tl.Series["clap"]))
	}

	resp, body = get("/posts/talk/timeline?from="+strconv.FormatInt(second-1, 10)+"&to="+now.Add(time.Second).Format(time.RFC3339)+"&step=1s", "Accept", "text/csv")
	rows, err := csv.NewReader(strings.NewReader(body)).ReadAll()
	want := [][]string{{"t", "likes", "unlikes", "clap"}, {strconv.FormatInt(second-1, 10), "0", "0", "0"}, {strconv.FormatInt(second, 10), "0", "0", "3"}}
	if err != nil || resp.Header.Get("Content-Type") != "text/csv; charset=utf-8" || !slices.EqualFunc(rows, want, slices.Equal) {
		t.Errorf("csv: %q %q, %v; want %q", resp.Header.Get("Content-Type"), rows, err, want)
	}

	for _, bad := range []string{
		"/posts/no%20such/timeline",
		"/posts/talk/timeline?from=10&to=10",
		"/posts/talk/timeline?from=x",
		"/posts/talk/timeline?to=-5",
		"/posts/talk/timeline?from=0&to=30000",
		"/posts/talk/timeline?from=0&to=20000&step=1",
		"/posts/talk/timeline?step=1.5s",
		"/posts/talk/timeline?step=0",
		"/posts/talk/timeline?format=xml",
	} {
		resp, body := get(bad)
		var e struct{ Error string }
		if resp.StatusCode != http.StatusBadRequest || json.Unmarshal([]byte(body), &e) != nil || e.Error == "" {
			t.Errorf("%s: %d %s; want 400 with a JSON error", bad, resp.StatusCode, body)
		}
	}

	srv.Kill()
	resp, body = get("/posts/talk/timeline")
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Errorf("Redis down: %d %s, Retry-After %q; want 503 with Retry-After", resp.StatusCode, body, resp.Header.Get("Retry-After"))
	}
}

func sum(s []int64) (n int64) {
	for _, v := range s {
		n += v
	}
	return n
}

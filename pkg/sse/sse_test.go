package sse

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

type gotEvent struct {
	id, event, data string
	hasID           bool
	retry           int64
}

func decodeAll(t *testing.T, chunks ...[]byte) ([]gotEvent, *Decoder) {
	t.Helper()
	var d Decoder
	var got []gotEvent
	for _, c := range chunks {
		err := d.Feed(c, func(e *Event) {
			got = append(got, gotEvent{string(e.ID), string(e.Event), string(e.Data), e.HasID, e.Retry})
		})
		if err != nil {
			t.Fatalf("Feed: %v", err)
		}
	}
	return got, &d
}

func sampleStream() []byte {
	var b []byte
	b = AppendRetry(b, 2500)
	b = AppendEvent(b, AppendIntID(nil, 7), EventCount, []byte(`{"post_id":"42","count":7,"ts":1}`))
	b = append(b, Ping...)
	b = AppendEvent(b, []byte("8"), EventCount, []byte(`{"post_id":"42","count":8,"ts":2}`))
	return b
}

func TestDecodeEncoded(t *testing.T) {
	got, d := decodeAll(t, sampleStream())
	want := []gotEvent{
		{retry: 2500},
		{id: "7", event: "count", data: `{"post_id":"42","count":7,"ts":1}`, hasID: true, retry: -1},
		{id: "8", event: "count", data: `{"post_id":"42","count":8,"ts":2}`, hasID: true, retry: -1},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %v; want %v", got, want)
	}
	if d.Comments != 1 {
		t.Errorf("got %d comments; want 1", d.Comments)
	}
}

func TestDecodeSplitAtEveryBoundary(t *testing.T) {
	stream := sampleStream()
	want, _ := decodeAll(t, stream)
	for i := 0; i <= len(stream); i++ {
		got, _ := decodeAll(t, stream[:i], stream[i:])
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("split at %d: got %v; want %v", i, got, want)
		}
	}
	// One byte at a time.
	var chunks [][]byte
	for i := range stream {
		chunks = append(chunks, stream[i:i+1])
	}
	if got, _ := decodeAll(t, chunks...); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("byte by byte: got %v; want %v", got, want)
	}
}

func TestDecodeCRLFAndMultilineData(t *testing.T) {
	got, _ := decodeAll(t, []byte("data: a\r\ndata: b\r\n\r\n"))
	if len(got) != 1 || got[0].data != "a\nb" {
		t.Errorf("got %v; want one event with data a\\nb", got)
	}
}

func TestDecodeLineTooLong(t *testing.T) {
	var d Decoder
	err := d.Feed(bytes.Repeat([]byte("x"), MaxLine+1), func(*Event) {})
	if !errors.Is(err, ErrLineTooLong) {
		t.Errorf("got %v; want ErrLineTooLong", err)
	}
}

func TestDecodeSteadyStateAllocs(t *testing.T) {
	var d Decoder
	frame := AppendEvent(nil, []byte("8"), EventCount, []byte(`{"post_id":"42","count":8,"ts":2}`))
	emit := func(*Event) {}
	_ = d.Feed(frame, emit)
	if n := testing.AllocsPerRun(100, func() { _ = d.Feed(frame, emit) }); n != 0 {
		t.Errorf("Feed allocates %v times per frame; want 0", n)
	}
}

func FuzzDecoderSplit(f *testing.F) {
	f.Add(sampleStream(), 3)
	f.Fuzz(func(t *testing.T, stream []byte, cut int) {
		if cut < 0 || cut > len(stream) {
			return
		}
		collect := func(chunks ...[]byte) (out []gotEvent, failed bool) {
			var d Decoder
			for _, c := range chunks {
				if err := d.Feed(c, func(e *Event) {
					out = append(out, gotEvent{string(e.ID), string(e.Event), string(e.Data), e.HasID, e.Retry})
				}); err != nil {
					return nil, true
				}
			}
			return out, false
		}
		whole, err1 := collect(stream)
		split, err2 := collect(stream[:cut], stream[cut:])
		if err1 || err2 {
			return
		}
		if fmt.Sprint(whole) != fmt.Sprint(split) {
			t.Fatalf("split at %d changes events: %v vs %v", cut, whole, split)
		}
	})
}

// TestWatchingFrame pins the watching event byte for byte and checks that a decoder sees it
// without an id, so the stream's last id stays the count event's.
func TestWatchingFrame(t *testing.T) {
	data := []byte(`{"post_id":"42","watching":12345,"ts":1700000000000000}`)
	got := AppendWatching(nil, data)
	want := "event: watching\ndata: {\"post_id\":\"42\",\"watching\":12345,\"ts\":1700000000000000}\n\n"
	if string(got) != want {
		t.Fatalf("got %q; want %q", got, want)
	}
	stream := AppendEvent(nil, []byte("7"), EventCount, []byte(`{"post_id":"42","count":7,"ts":1}`))
	stream = append(stream, got...)
	events, _ := decodeAll(t, stream)
	if len(events) != 2 {
		t.Fatalf("got %d events; want 2", len(events))
	}
	if w := events[1]; w.event != EventWatching || w.hasID || w.data != string(data) {
		t.Errorf("watching event decoded as %+v; want event watching, no id, data %s", w, data)
	}
}

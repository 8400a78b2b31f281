package logging

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestNewWritesJSONToGivenWriter(t *testing.T) {
	var buf bytes.Buffer
	log, err := New("svc", "info", &buf)
	if err != nil {
		t.Fatal(err)
	}
	log.Debug("hidden")
	log.Info("shown")
	var line struct{ Msg, Service, Level string }
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatalf("not one JSON line: %q", buf.String())
	}
	if line.Msg != "shown" || line.Service != "svc" || line.Level != "info" {
		t.Errorf("got %+v", line)
	}
	if _, err := New("svc", "loud", &buf); err == nil {
		t.Error("accepted level loud")
	}
}

package ramp

import (
	"context"
	"slices"
	"testing"
)

func TestResolveNodes(t *testing.T) {
	tests := []struct {
		give []string
		want []string
	}{
		{[]string{"http://127.0.0.1:8090"}, []string{"http://127.0.0.1:8090"}},
		{[]string{"http://127.0.0.1:1", "http://127.0.0.1:2"}, []string{"http://127.0.0.1:1", "http://127.0.0.1:2"}},
		{[]string{"http://localhost:8090"}, []string{"http://localhost:8090"}}, // one IPv4 address: kept as named
	}
	for _, tt := range tests {
		got, err := ResolveNodes(context.Background(), tt.give)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("ResolveNodes(%v) = %v; want %v", tt.give, got, tt.want)
		}
	}
	if _, err := ResolveNodes(context.Background(), []string{"127.0.0.1:8090"}); err == nil {
		t.Error("a URL without scheme: err = nil; want an error")
	}
}

func TestPreferIPv4(t *testing.T) {
	got := preferIPv4([]string{"::1", "10.0.0.3", "10.0.0.2", "10.0.0.3"})
	if want := []string{"10.0.0.2", "10.0.0.3"}; !slices.Equal(got, want) {
		t.Fatalf("preferIPv4 = %v; want %v", got, want)
	}
}

package main

import (
	"bytes"
	"context"
	"net"
	"testing"
	"time"
)

// TestNchanBridgeCommand: the subcommand is registered, rejects a bad publisher, and fails when
// Redis is unreachable rather than waiting.
func TestNchanBridgeCommand(t *testing.T) {
	getenv := func(string) string { return "" }
	var out, errb bytes.Buffer
	if err := run(context.Background(), []string{"loadgen", "nchan-bridge", "--publisher", "127.0.0.1:1/pub"}, getenv, nil, &out, &errb); err == nil {
		t.Fatal("a publisher without http:// accepted")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := run(ctx, []string{"loadgen", "nchan-bridge", "--redis", addr}, getenv, nil, &out, &errb); err == nil || ctx.Err() != nil {
		t.Fatalf("bridge to a closed port: err %v, ctx %v; want a prompt error", err, ctx.Err())
	}
}

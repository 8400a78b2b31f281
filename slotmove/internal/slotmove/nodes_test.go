package slotmove

import (
	"reflect"
	"testing"
)

// TestParseNodes reads a CLUSTER NODES reply with a migrating slot, a replica and a node that
// owns no slot: ranges and single slots are owned, "[n->-id]" markers are not.
func TestParseNodes(t *testing.T) {
	text := "a1 127.0.0.1:7000@17000 myself,master - 0 0 1 connected 0-5460 [5461->-b2]\n" +
		"b2 127.0.0.1:7001@17001,host-b master - 0 1 2 connected 5461-10922 16383\n" +
		"c3 127.0.0.1:7002@17002 slave a1 0 1 1 connected\n" +
		"d4 127.0.0.1:7003@17003 master,fail - 0 1 3 disconnected\n"
	nodes, err := parseNodes(text)
	if err != nil {
		t.Fatal(err)
	}
	want := []node{
		{id: "a1", addr: "127.0.0.1:7000", master: true, slots: [][2]int{{0, 5460}}},
		{id: "b2", addr: "127.0.0.1:7001", master: true, slots: [][2]int{{5461, 10922}, {16383, 16383}}},
		{id: "c3", addr: "127.0.0.1:7002"},
		{id: "d4", addr: "127.0.0.1:7003", master: true, failed: true},
	}
	if !reflect.DeepEqual(nodes, want) {
		t.Errorf("parseNodes:\n got %+v\nwant %+v", nodes, want)
	}
	if !nodes[1].owns(16383) || nodes[1].owns(0) || nodes[0].owns(5461) {
		t.Error("owns disagrees with the ranges")
	}
	if _, err := parseNodes("a1 127.0.0.1:7000@17000 master - 0 0 1 connected x-y"); err == nil {
		t.Error("malformed slot accepted")
	}
}

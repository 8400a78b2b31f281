// Package sse is the Server-Sent Events wire format as likes speaks it: the fanout node appends
// frames with it, and the load generator and tests read them back with Decoder. Encoding appends
// to a caller's buffer so that a frame is built once per update and shared by every viewer.
package sse

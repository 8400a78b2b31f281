// Package contract fuzzes likes' HTTP API against its own OpenAPI documents (pkg/openapi): a
// property-based test (pgregory.net/rapid) picks an operation from the documents, with or without
// an identity (a session token, the admin token, a forged bearer), draws each parameter from its
// schema with a strong bias to boundary and hostile values, sends it to a real writer-svc and a
// real fanout-svc (built binaries, separate processes) on a real redis-server, and holds every
// reply to the document: it arrives within a few seconds, it is no 5xx but a documented 503, no
// identity the operation's security does not accept gets a 2xx, it conforms to the document
// (testkit/apicheck), and neither process dies. After the run the processes' RSS and Redis's
// used_memory must be back within stated bounds of their start (memory_test.go).
//
// It is not part of package e2e, which runs alone for its timings: this one runs with the other
// packages of `go test ./...`, briefly (a time budget, -contract.budget); scripts/contract-fuzz.sh
// runs it longer before a release. Every run logs its rapid seed first, and a failure the seed of
// its shrunk draw: rerun either with -rapid.seed. -contract.ops narrows the operations drawn,
// -contract.collect surveys (every distinct violation once, no shrinking).
package contract

// Package report turns a ramp's measurements into what people and machines read: an aligned
// table, JSON, CSV and a self-contained HTML page with charts against connections.
package report

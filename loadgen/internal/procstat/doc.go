// Package procstat reads what the load generator needs to know about its own process and machine:
// CPU time used (to warn when the generator, not the system under test, is the bottleneck), its
// memory (the generator's own cost per viewer), the open-file limit (which caps viewers per
// process), and the CPUs it may run on.
package procstat

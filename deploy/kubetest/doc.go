// Package kubetest applies the Kubernetes deploy to a real cluster and exercises it as an
// operator would: the single-node cluster of `make kube-offline` (scripts/kube-offline.sh:
// etcd, kube-apiserver, kube-controller-manager, kube-scheduler, a kubelet on containerd with
// the CNI bridge, kube-proxy and CoreDNS, all built or packaged on this machine, no registry),
// with the Helm chart deploy/helm/likes installed by `helm upgrade --install` (the helm the
// Makefile pins) with this cluster's values, deploy/helm/values-kube-offline.yaml (the changes
// deploy/kube makes to deploy/base; deploy/helm/helmtest holds the chart's objects to the base's).
//
// Its one test walks an operator's day and logs a figure at each step: every Pod Ready through
// its own probe; a like through the writer's Service reaching viewers on every fanout Pod through
// the fanout Service; every public route of the chart's Ingresses sent through the HAProxy
// Ingress controller to its own Service, the internal ones refused, and a like through it
// reaching viewers through it; fanout-svc scaled to four through its HPA and loadgen's ramp run as a Job
// over all four; a rolling restart losing no acknowledged like; evictions held to the
// PodDisruptionBudget; a Pod killed and its viewers seen to move before the like; every Redis
// data Pod deleted at once and back on its volume with every acknowledged like.
//
// The cluster: TestMain starts it (scripts/kube-offline.sh) when the test runs as root with a
// Docker engine answering (the images come from it), and takes it down afterwards
// (scripts/kube-down.sh) unless LIKES_KUBE_KEEP=1 or the cluster was running before. Where it
// cannot start (not root, no engine, LIKES_KUBE=0) the suite skips, saying why on stderr. A
// script that fails where it should start fails the suite.
package kubetest

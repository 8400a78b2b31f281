package deploytest

import (
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// A small evaluator of NetworkPolicy ingress semantics, as the API documents them
// (networking.k8s.io/v1): enough to say, from the manifests alone, whether one pod may open a
// connection to a port of another. The cluster of deploy/kubetest cannot say it: its CNI bridge
// enforces no policy.
//
//   - A policy applies to the pods of its own namespace that its podSelector selects (an empty
//     selector selects them all), for ingress when policyTypes names Ingress or is empty.
//   - A pod no applicable policy selects is not isolated: every connection reaches it.
//   - An isolated pod accepts a connection when a rule of any policy selecting it admits it
//     (the policies add up; there is no deny rule). A rule admits a connection when a peer of
//     its `from` matches the source (no `from`: every source) and one of its `ports` matches
//     the port (no `ports`: every port).
//   - A peer with only a podSelector matches the policy's own namespace's pods; with only a
//     namespaceSelector, every pod of the namespaces it selects; with both, the pods that the
//     podSelector selects in those namespaces. Selectors are metav1.LabelSelectors: matchLabels
//     and matchExpressions (In, NotIn, Exists, DoesNotExist), ANDed.
//   - A port is a number (with endPort, a range) or a name, which resolves to the target pod's
//     container port of that name and protocol; the protocol defaults to TCP.
//
// Not modelled, and refused with an error where a policy uses it: ipBlock peers (addresses, not
// pods), and Egress (these policies are ingress only). Not modelled either, because no policy
// can change them: traffic from the pod's own node (the kubelet's probes) and a pod's
// connections to itself, which are always allowed.

// netPod is a pod as NetworkPolicy sees it.
type netPod struct {
	name      string // for messages
	namespace string
	nsLabels  labels.Set // the labels of its namespace
	labels    labels.Set
	ports     []corev1.ContainerPort // what named ports resolve against
}

// netVerdict is the fate of one connection: whether any policy isolates the target, and which
// policies admit the connection.
type netVerdict struct {
	isolated bool
	by       []string // names of the policies whose rules admit it
}

// allowed reports whether the connection gets through.
func (v netVerdict) allowed() bool { return !v.isolated || len(v.by) > 0 }

// appliesForIngress reports whether p governs connections into its pods: its policyTypes name
// Ingress, or are empty (the API then sets Ingress, and Egress only for egress rules).
func appliesForIngress(p *networkingv1.NetworkPolicy) bool {
	return len(p.Spec.PolicyTypes) == 0 || slices.Contains(p.Spec.PolicyTypes, networkingv1.PolicyTypeIngress)
}

// policySelects reports whether policy p applies to pod for ingress.
func policySelects(p *networkingv1.NetworkPolicy, pod netPod) (bool, error) {
	if p.Namespace != pod.namespace || !appliesForIngress(p) {
		return false, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(&p.Spec.PodSelector)
	if err != nil {
		return false, fmt.Errorf("policy %s podSelector: %w", p.Name, err)
	}
	return sel.Matches(pod.labels), nil
}

// evalIngress decides a TCP or UDP connection from one pod to port of another under policies.
func evalIngress(policies []*networkingv1.NetworkPolicy, from, to netPod, proto corev1.Protocol, port int32) (netVerdict, error) {
	var v netVerdict
	for _, p := range policies {
		selects, err := policySelects(p, to)
		if err != nil || !selects {
			if err != nil {
				return v, err
			}
			continue
		}
		v.isolated = true
		for i, rule := range p.Spec.Ingress {
			ok, err := ruleAdmits(rule, p.Namespace, from, to, proto, port)
			if err != nil {
				return v, fmt.Errorf("policy %s ingress[%d]: %w", p.Name, i, err)
			}
			if ok {
				v.by = append(v.by, p.Name)
				break
			}
		}
	}
	return v, nil
}

// ruleAdmits applies one ingress rule of a policy in namespace ns.
func ruleAdmits(rule networkingv1.NetworkPolicyIngressRule, ns string, from, to netPod, proto corev1.Protocol, port int32) (bool, error) {
	fromOK := len(rule.From) == 0
	for _, peer := range rule.From {
		ok, err := peerMatches(peer, ns, from)
		if err != nil {
			return false, err
		}
		fromOK = fromOK || ok
	}
	portOK := len(rule.Ports) == 0
	for _, p := range rule.Ports {
		ok, err := portMatches(p, to, proto, port)
		if err != nil {
			return false, err
		}
		portOK = portOK || ok
	}
	return fromOK && portOK, nil
}

// peerMatches applies one `from` peer of a policy in namespace ns to the source pod.
func peerMatches(peer networkingv1.NetworkPolicyPeer, ns string, from netPod) (bool, error) {
	switch {
	case peer.IPBlock != nil:
		return false, fmt.Errorf("ipBlock %s: the evaluator models pods, not addresses", peer.IPBlock.CIDR)
	case peer.PodSelector == nil && peer.NamespaceSelector == nil:
		return false, errors.New("a peer with no selector (the API refuses it)")
	}
	if peer.NamespaceSelector == nil {
		if from.namespace != ns {
			return false, nil
		}
	} else {
		sel, err := metav1.LabelSelectorAsSelector(peer.NamespaceSelector)
		if err != nil {
			return false, fmt.Errorf("namespaceSelector: %w", err)
		}
		if !sel.Matches(from.nsLabels) {
			return false, nil
		}
	}
	if peer.PodSelector == nil {
		return true, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(peer.PodSelector)
	if err != nil {
		return false, fmt.Errorf("podSelector: %w", err)
	}
	return sel.Matches(from.labels), nil
}

// portMatches applies one port of a rule to a connection to port of pod to.
func portMatches(p networkingv1.NetworkPolicyPort, to netPod, proto corev1.Protocol, port int32) (bool, error) {
	want := corev1.ProtocolTCP
	if p.Protocol != nil {
		want = *p.Protocol
	}
	switch {
	case want != proto:
		return false, nil
	case p.Port == nil:
		if p.EndPort != nil {
			return false, errors.New("endPort without port")
		}
		return true, nil // every port of the protocol
	case p.Port.Type == intstr.String:
		if p.EndPort != nil {
			return false, fmt.Errorf("endPort with the named port %s", p.Port.StrVal)
		}
		return slices.ContainsFunc(to.ports, func(c corev1.ContainerPort) bool {
			return c.Name == p.Port.StrVal && containerProtocol(c) == proto && c.ContainerPort == port
		}), nil
	}
	hi := p.Port.IntVal
	if p.EndPort != nil {
		if *p.EndPort < hi {
			return false, fmt.Errorf("endPort %d below port %d", *p.EndPort, hi)
		}
		hi = *p.EndPort
	}
	return port >= p.Port.IntVal && port <= hi, nil
}

// containerProtocol is a container port's protocol, TCP when unset.
func containerProtocol(c corev1.ContainerPort) corev1.Protocol {
	if c.Protocol == "" {
		return corev1.ProtocolTCP
	}
	return c.Protocol
}

// namespaceLabels is what a namespaceSelector sees of namespace name: the labels it is given
// plus kubernetes.io/metadata.name, which the API server sets to the name on every namespace.
func namespaceLabels(name string, given map[string]string) labels.Set {
	set := labels.Set{corev1.LabelMetadataName: name}
	for k, v := range given {
		if k != corev1.LabelMetadataName {
			set[k] = v
		}
	}
	return set
}

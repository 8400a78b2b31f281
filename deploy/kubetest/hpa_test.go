package kubetest

import (
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"
)

// hpaStatus is the part of the HPA's status the step reads.
type hpaStatus struct {
	Status struct {
		CurrentReplicas int `json:"currentReplicas"`
		DesiredReplicas int `json:"desiredReplicas"`
		CurrentMetrics  []struct {
			Resource *struct {
				Name    string `json:"name"`
				Current struct {
					AverageUtilization *int `json:"averageUtilization"`
				} `json:"current"`
			} `json:"resource"`
		} `json:"currentMetrics"`
		Conditions []struct {
			Type    string `json:"type"`
			Status  string `json:"status"`
			Reason  string `json:"reason"`
			Message string `json:"message"`
		} `json:"conditions"`
	} `json:"status"`
}

// stepHPA: the fanout HPA is valid and reads both of its metrics (CPU and memory, from
// metrics-server): ScalingActive, a current utilization for each.
func stepHPA(t *testing.T, got *figures) {
	var h hpaStatus
	await(t, 2*time.Minute, 2*time.Second, "the fanout HPA to read CPU and memory", func() error {
		out, err := kubectl(time.Minute, "", "-n", namespace, "get", "hpa", "fanout-svc", "-o", "json")
		if err != nil {
			return err
		}
		if err := json.Unmarshal([]byte(out), &h); err != nil {
			return err
		}
		active, read := false, map[string]bool{}
		for _, c := range h.Status.Conditions {
			if c.Type == "ScalingActive" && c.Status == "True" {
				active = true
			}
		}
		for _, m := range h.Status.CurrentMetrics {
			if m.Resource != nil && m.Resource.Current.AverageUtilization != nil {
				read[m.Resource.Name] = true
			}
		}
		if !active || !read["cpu"] || !read["memory"] {
			return fmt.Errorf("ScalingActive %v, metrics read %v; conditions %+v", active, read, h.Status.Conditions)
		}
		return nil
	})
	line := "hpa: ScalingActive, reading"
	for _, m := range h.Status.CurrentMetrics {
		if m.Resource == nil || m.Resource.Current.AverageUtilization == nil {
			continue
		}
		line += " " + m.Resource.Name + " " + strconv.Itoa(*m.Resource.Current.AverageUtilization) + "%"
	}
	got.add(t, "%s of requests over %d Pods", line, h.Status.CurrentReplicas)
}

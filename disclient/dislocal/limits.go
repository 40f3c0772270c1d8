package dislocal

import (
	"fmt"
	"strings"
	"time"

	"github.com/disgw/disgw/disclient"
)

// Limits are DIS's account and scaling limits. A zero field enforces
// nothing, which is the default: an embedded DIS on a laptop or in CI
// should not stop at 50 partitions or refuse a second scaling for an hour.
// DISLimits holds DIS's documented values for testing against them.
type Limits struct {
	// CommonPartitions and AdvancedPartitions are the ACTIVE partitions a
	// project may have over all its streams of each type; DIS.4308 past
	// them, on CreateStream and on scaling out.
	CommonPartitions, AdvancedPartitions int
	// Apps is how many apps a project may have; DIS.4329 past it.
	Apps int
	// ScalingsPerHour is how many UpdatePartitionCount changes a stream
	// may have in any hour.
	ScalingsPerHour int
	// ScalingCooldown is how long after a successful change a stream
	// refuses the next one.
	ScalingCooldown time.Duration
}

// DISLimits returns the limits DIS documents (docs/dis-api.md §2): 50
// COMMON and 10 ADVANCED partitions per account, at most 5 scalings per
// stream per hour and none in the hour after a successful one. DIS
// documents an app quota (DIS.4329) but not its size, so Apps is 0.
func DISLimits() Limits {
	return Limits{CommonPartitions: 50, AdvancedPartitions: 10, ScalingsPerHour: 5, ScalingCooldown: time.Hour}
}

// ParseLimits checks a --embedded-dis-limits value: "none" (or "") for no
// account or scaling limits, "dis" for DISLimits, so a deployment can find
// out on its own machine whether its topics and groups fit a DIS account.
func ParseLimits(s string) (Limits, error) {
	switch s {
	case "", "none":
		return Limits{}, nil
	case "dis":
		return DISLimits(), nil
	default:
		return Limits{}, fmt.Errorf("dislocal: unknown limits %q (want \"none\" or \"dis\")", s)
	}
}

// checkPartitionQuota refuses adding more ACTIVE partitions of
// streamType to project past the account quota. s.mu must be held.
func (s *Server) checkPartitionQuota(project, streamType string, more int32) error {
	limit := s.cfg.Limits.CommonPartitions
	if streamType == disclient.StreamTypeAdvanced {
		limit = s.cfg.Limits.AdvancedPartitions
	}
	if limit <= 0 || more <= 0 {
		return nil
	}
	used := 0
	for _, st := range s.streams {
		if st.project == project && st.quotaType == streamType {
			used += int(st.quotaPartitions)
		}
	}
	if used+int(more) > limit {
		return errorf(disclient.CodeQuotaExceeded, "The number of partitions exceeds the quota. [%s: %d in use, %d more asked, quota %d]", streamType, used, more, limit)
	}
	return nil
}

// checkAppQuota refuses one more app in project past the quota. s.mu must
// be held.
func (s *Server) checkAppQuota(project string) error {
	limit := s.cfg.Limits.Apps
	if limit <= 0 {
		return nil
	}
	used := 0
	prefix := project + "\x00"
	for k := range s.apps {
		if strings.HasPrefix(k, prefix) {
			used++
		}
	}
	if used >= limit {
		return errorf(disclient.CodeAppQuotaExceeded, "The number of apps exceeds the quota. [%d]", limit)
	}
	return nil
}

// checkScalingRate refuses a partition count change that comes too soon
// after the stream's earlier ones (updates, oldest first, at now ms).
// DIS documents the limits but no error code for them: DIS.4200 with a
// message saying which limit.
func (s *Server) checkScalingRate(updates []disclient.PartitionUpdate, now int64) error {
	l := s.cfg.Limits
	if len(updates) == 0 {
		return nil
	}
	if last := updates[len(updates)-1].CreateTimestamp; l.ScalingCooldown > 0 && now-last < l.ScalingCooldown.Milliseconds() {
		return errorf(disclient.CodeInvalidRequest, "Scaling is not allowed yet: the last partition count change was %d ms ago, the next is allowed %s after it.", now-last, l.ScalingCooldown)
	}
	if l.ScalingsPerHour <= 0 {
		return nil
	}
	recent := 0
	for _, u := range updates {
		if now-u.CreateTimestamp < time.Hour.Milliseconds() {
			recent++
		}
	}
	if recent >= l.ScalingsPerHour {
		return errorf(disclient.CodeInvalidRequest, "Scaling is not allowed yet: at most %d partition count changes per stream per hour.", l.ScalingsPerHour)
	}
	return nil
}

package hoppertype

import "fmt"

// ParentPolicy says what a job waiting for parents (InsertOpts.After) does when one of them
// ends failed or canceled (docs/workflows.md).
type ParentPolicy string

// The parent failure policies.
const (
	// ParentCancel (the default): the job ends canceled, reason "parent <id> failed" (or
	// "canceled"), and its own children follow their policies in turn.
	ParentCancel ParentPolicy = "cancel"
	// ParentRun: the job still runs once every parent has ended.
	ParentRun ParentPolicy = "run"
	// ParentSkip: the job ends canceled, reason "skipped: parent <id> failed", but counts as
	// succeeded for its own children: they are not canceled because of it.
	ParentSkip ParentPolicy = "skip"
)

// ParentPolicies lists the policies in a stable order.
var ParentPolicies = []ParentPolicy{ParentCancel, ParentRun, ParentSkip}

// Valid reports whether p is a known policy; the empty policy is not (it means the default
// where an option is read, see OrDefault).
func (p ParentPolicy) Valid() bool {
	return p == ParentCancel || p == ParentRun || p == ParentSkip
}

// OrDefault is p, or ParentCancel when p is empty.
func (p ParentPolicy) OrDefault() ParentPolicy {
	if p == "" {
		return ParentCancel
	}
	return p
}

// ParseParentPolicy returns the policy named by text ("" is the default, cancel), or an error
// naming the accepted values.
func ParseParentPolicy(text string) (ParentPolicy, error) {
	p := ParentPolicy(text).OrDefault()
	if !p.Valid() {
		return "", fmt.Errorf("unknown parent failure policy %q (want one of %v)", text, ParentPolicies)
	}
	return p, nil
}

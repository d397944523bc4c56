package scenario

import "strings"

// SplitScenario splits a --scenario value "name@generation" into its
// parts; without "@" the generation is "". The generations themselves are
// timing.Generation values (timing.LookupGeneration).
func SplitScenario(v string) (name, generation string) {
	name, generation, _ = strings.Cut(v, "@")
	return name, generation
}

package run

import (
	"encoding/json"
	"fmt"

	"github.com/agentperf/agentperf/replay"
	"github.com/agentperf/agentperf/scenario"
)

// ApplyScenario applies a scenario preset to s. set says what the caller
// gave explicitly (an Opt is Set where the user chose the value, with the
// corpus kind and the override switch): the preset fills every setting
// left unset, checks its locks against the ones given, and s takes the
// result, with the preset's generation, its name and the reasons the run
// is already not a valid submission (unsafe_override). It returns the
// settings the preset filled, which are also added to the Notes (one line
// of the run log each). A lock violated without the override is an
// *InputError.
func (s *Spec) ApplyScenario(p *scenario.Preset, set scenario.Settings) (filled []string, err error) {
	reasons, err := p.Enforce(&set)
	if err != nil {
		return nil, inputErr(err)
	}
	extra := make([]replay.ExtraInput, 0, len(set.ExtraInputs))
	for _, e := range set.ExtraInputs {
		b, err := json.Marshal(e.Value)
		if err != nil {
			return nil, inputErr(fmt.Errorf("--extra-inputs %s: %v", e.Key, err))
		}
		extra = append(extra, replay.ExtraInput{Key: e.Key, Value: b})
	}
	c := &s.Replay
	c.Generation = p.Generation
	fromScenario(&set, s) // the settings of the table
	s.CacheBust = set.CacheBust.V
	c.ExtraInputs = extra
	set.WarmupGracePeriod.Into(&c.WarmupGracePeriod)
	set.NumDatasetEntries.Into(&s.Corpus.Options.Select.NumEntries)
	s.Scenario = p.Name
	s.Coverage = scenario.Coverage{Required: p.CoverageRatio, MinPhase: p.MinDuration}
	s.Validity = reasons
	s.UnsafeOverride = s.UnsafeOverride || set.UnsafeOverride
	s.Notes = append(s.Notes, set.Filled...)
	return set.Filled, nil
}

// ScenarioSettings is scenario.Settings as s holds them, every Opt set:
// the starting point of a caller that then unsets what its user did not
// choose (a CLI: the flags not given).
func (s *Spec) ScenarioSettings() scenario.Settings {
	c := &s.Replay
	set := scenario.Settings{
		TimingMode:        scenario.TimingAgenticReplay,
		UnsafeOverride:    s.UnsafeOverride,
		CacheBust:         scenario.Some(s.CacheBust),
		Concurrency:       []int{c.Concurrency},
		WarmupGracePeriod: scenario.Some(c.WarmupGracePeriod),
		NumDatasetEntries: scenario.Some(s.Corpus.Options.Select.NumEntries),
	}
	toScenario(s, &set) // the settings of the table
	for _, e := range c.ExtraInputs {
		var v any
		if json.Unmarshal(e.Value, &v) == nil {
			set.ExtraInputs = append(set.ExtraInputs, scenario.ExtraInput{Key: e.Key, Value: v})
		}
	}
	set.Loader, set.PublicDataset, set.HFDataset = LoaderKind(s.Corpus.Source)
	return set
}

// ReadScenarioEnvironment is ReadEnvironment under the preset p (nil: no
// preset): p's environment defaults (scenario.Preset.Env) apply where the
// variable is unset, each logged as a note, and the variables p ignores
// are noted as ignored and have no effect.
func ReadScenarioEnvironment(p *scenario.Preset, environ []string, getenv func(string) string) (Environment, error) {
	if p == nil {
		return ReadEnvironment(environ, getenv)
	}
	environ, applied := p.Environ(environ)
	e, err := ReadEnvironment(environ, p.Getenv(getenv))
	for _, v := range p.IgnoredEnv {
		if getenv(v.Name) == "" {
			continue
		}
		e.Notes = append(e.Notes, fmt.Sprintf("%s is ignored under scenario %s: %s", v.Name, p.Name, v.Why))
		if v.Name == envLiveAssistant {
			e.LiveAssistant, e.LiveAssistantSet = false, false
		}
	}
	e.Notes = append(e.Notes, applied...)
	return e, err
}

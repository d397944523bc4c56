package run

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/agentperf/agentperf/scenario"
)

// TestSettingsTable: every row names a flag once, binds a field of its
// own and of its unit's type, and Bind stores its default there.
func TestSettingsTable(t *testing.T) {
	flags := map[string]bool{}
	fields := map[string]bool{}
	keys := map[string]bool{}
	var s Spec
	ptrs := map[any]string{}
	for _, st := range Settings() {
		if st.Flag == "" || st.Field == "" || st.Help == "" {
			t.Errorf("%+v: want a flag, a field and help", st)
		}
		if flags[st.Flag] || fields[st.Field] {
			t.Errorf("--%s (%s): flag or field twice in the table", st.Flag, st.Field)
		}
		flags[st.Flag], fields[st.Field] = true, true
		if st.Key != "" && keys[st.Key] {
			t.Errorf("--%s: input_config key %s twice", st.Flag, st.Key)
		}
		keys[st.Key] = true
		p := st.Bind(&s)
		if other, dup := ptrs[p]; dup {
			t.Errorf("--%s and --%s bind the same field", st.Flag, other)
		}
		ptrs[p] = st.Flag
		if got := reflect.ValueOf(p).Elem().Interface(); !reflect.DeepEqual(got, st.Default()) {
			t.Errorf("--%s: Bind stored %v, want the default %v", st.Flag, got, st.Default())
		}
		_, isDur := p.(*time.Duration)
		if isDur != (st.Unit == UnitSeconds) {
			t.Errorf("--%s: unit %q on a %T field", st.Flag, st.Unit, p)
		}
	}
}

// TestSettingsLockRule: a row's lock rule says what the preset does, and
// agrees with the flags the scenario asks about (scenario.Settings.Given):
// a setting a preset fills or locks is one whose flag it asks about, and
// a free one is not.
func TestSettingsLockRule(t *testing.T) {
	var set scenario.Settings
	for _, st := range Settings() {
		if (st.Lock != Free) != (st.opt.set != nil) {
			t.Errorf("--%s: lock rule %d, but a preset asks whether it was given: %v", st.Flag, st.Lock, st.opt.set != nil)
		}
		if st.opt.set != nil && st.opt.set(&set) == nil {
			t.Errorf("--%s: no option", st.Flag)
		}
	}
	// A preset filling a Filled setting, or locking a Locked one, changes
	// the Spec: the agentx preset's soft defaults and the MVP's locks.
	for _, name := range []string{"agentx", "inferencex-agentx-mvp"} {
		p, err := scenario.LookupAt(name, "")
		if err != nil {
			t.Fatal(err)
		}
		s := NewSpec()
		for _, st := range Settings() {
			st.Bind(&s)
		}
		before := s
		set := s.GivenSettings(func(string) bool { return false })
		set.Loader = scenario.LoaderPublic
		set.PublicDataset = p.PublicPrefix
		if len(p.Aliases) > 0 {
			set.PublicDataset = p.Aliases[0]
		}
		if _, err := s.ApplyScenario(p, set); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var changed []string
		for _, st := range Settings() {
			a := reflect.ValueOf(st.bind(&before)).Elem().Interface()
			b := reflect.ValueOf(st.bind(&s)).Elem().Interface()
			if !reflect.DeepEqual(a, b) {
				changed = append(changed, st.Flag)
				if st.Lock == Free || st.Lock == Excludes {
					t.Errorf("%s changed the free setting --%s (%v → %v)", name, st.Flag, a, b)
				}
			}
		}
		if len(changed) == 0 {
			t.Errorf("%s changed no setting of the table", name)
		}
		t.Log(name, "fills", fmt.Sprint(changed))
		if !slices.Contains(changed, "streaming") {
			t.Errorf("%s did not lock --streaming on", name)
		}
	}
}

// TestGivenSettings: an option of the scenario is Set exactly when one of
// its flags was given; every option has a flag (a new scenario option
// without one would stay Set, as if the user had chosen it, and fail here).
func TestGivenSettings(t *testing.T) {
	s := NewSpec()
	none := s.GivenSettings(func(string) bool { return false })
	v := reflect.ValueOf(none)
	for i := 0; i < v.NumField(); i++ {
		if v.Field(i).Kind() != reflect.Struct {
			continue
		}
		if f := v.Field(i).FieldByName("Set"); f.IsValid() && f.Bool() {
			t.Errorf("scenario.Settings.%s: Set with no flag given: no flag of the table or otherGiven sets it", v.Type().Field(i).Name)
		}
	}
	set := s.GivenSettings(func(f string) bool { return f == "agentic-warmup-grace-period" || f == "streaming" })
	if !set.WarmupGracePeriod.Set || !set.Streaming.Set || set.IgnoreEOS.Set || set.BenchmarkDuration.Set {
		t.Errorf("given --agentic-warmup-grace-period and --streaming: warmup %v streaming %v ignore_eos %v duration %v",
			set.WarmupGracePeriod.Set, set.Streaming.Set, set.IgnoreEOS.Set, set.BenchmarkDuration.Set)
	}
}

// TestScenarioSettingsRoundTrip: ScenarioSettings carries every setting of
// the table that has an option, Set, with the Spec's value; ApplyScenario's
// copy back (fromScenario) writes a Set option's value into the Spec.
func TestScenarioSettingsRoundTrip(t *testing.T) {
	s := NewSpec()
	s.Replay.Streaming, s.Replay.Seed, s.Replay.BenchmarkDuration, s.StatsInterval = true, 5, 7*time.Second, 3*time.Second
	set := s.ScenarioSettings()
	if !set.Streaming.Set || !set.Streaming.V || set.RandomSeed.V != 5 || set.BenchmarkDuration.V != 7*time.Second || set.StatsInterval.V != 3*time.Second || !set.AgenticCacheWarmup.Set {
		t.Errorf("ScenarioSettings = %+v", set)
	}
	set.RandomSeed = scenario.Some(int64(9))
	set.StatsInterval.V, set.StatsInterval.Set = time.Minute, false // unset: not copied
	fromScenario(&set, &s)
	if s.Replay.Seed != 9 || s.StatsInterval != 3*time.Second || !s.Replay.Streaming {
		t.Errorf("after fromScenario: seed %d stats interval %v streaming %v, want 9, 3s (unset, kept), true", s.Replay.Seed, s.StatsInterval, s.Replay.Streaming)
	}
}

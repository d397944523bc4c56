// The --config file: a YAML mapping of flag values laid under the command
// line.

package cliflags

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"

	"github.com/agentperf/agentperf/internal/suggest"
)

// ConfigFlag is the flag naming a YAML file of flag values (aiperf's
// -f/--config; guidellm and inference-perf take one too).
const ConfigFlag = "config"

// configAnnotation marks the flag AddConfigFlag registers, so that a
// command's own flag of the same name is never read as a YAML file.
const configAnnotation = "agentperf/config-file"

// AddConfigFlag registers --config on fs.
func AddConfigFlag(fs *pflag.FlagSet) {
	fs.StringP(ConfigFlag, "f", "", "YAML file of this command's flags: each key a flag name without the dashes (concurrency: 8, streaming: true, header: [...] for a repeatable flag); flags on the command line win; an unknown key is an error with file:line")
	_ = fs.SetAnnotation(ConfigFlag, configAnnotation, []string{"true"})
}

// ConfigFile returns the YAML file fs's parsed command line names with the
// flag AddConfigFlag registered, or "" when there is none (a command
// without that flag, or whose own flag of that name means something else).
func ConfigFile(fs *pflag.FlagSet) string {
	f := fs.Lookup(ConfigFlag)
	if f == nil || f.Annotations[configAnnotation] == nil {
		return ""
	}
	return f.Value.String()
}

// ApplyConfigFile overlays the YAML mapping in path on fs, whose command
// line is parsed: each key is the name of one of fs's flags and its value
// is set as if it were given on the command line (a sequence sets a
// repeatable flag once per item), unless the command line gave that flag
// or an alias of it, which wins. An unknown key, a key given twice (also
// through an alias), or a value the flag refuses is an error naming
// path:line.
func ApplyConfigFile(fs *pflag.FlagSet, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("--config: %w", err)
	}
	return ApplyConfig(fs, path, data)
}

// ApplyConfig is ApplyConfigFile on the file's bytes.
func ApplyConfig(fs *pflag.FlagSet, path string, data []byte) error {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("%s: %v", path, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if len(doc.Content) == 0 {
		return nil // an empty file sets nothing
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return fmt.Errorf("%s:%d: want a mapping of flag names to values (e.g. concurrency: 8), not a %s", path, root.Line, kindName(root.Kind))
	}
	aliases := flagAliases(fs)
	canon := func(name string) string {
		if c, ok := aliases[name]; ok {
			return c
		}
		return name
	}
	given := map[string]bool{} // on the command line, by canonical name
	fs.Visit(func(f *pflag.Flag) { given[canon(f.Name)] = true })
	seen := map[string]int{} // in the file: canonical name → line
	var names []string
	fs.VisitAll(func(f *pflag.Flag) {
		if !f.Hidden && f.Name != ConfigFlag {
			names = append(names, f.Name)
		}
	})
	sort.Strings(names)
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		at := fmt.Sprintf("%s:%d", path, k.Line)
		if k.Kind != yaml.ScalarNode {
			return fmt.Errorf("%s: a key must be a flag name, not a %s", at, kindName(k.Kind))
		}
		name := strings.TrimLeft(k.Value, "-")
		f := fs.Lookup(name)
		if f == nil || name == ConfigFlag {
			why := "the keys are this command's flag names (see --help)"
			if name == ConfigFlag {
				why = "a config file cannot name another one"
			}
			return fmt.Errorf("%s: unknown key %q: %s%s", at, k.Value, why, suggest.DidYouMean(name, names))
		}
		c := canon(name)
		if line, dup := seen[c]; dup {
			return fmt.Errorf("%s: %q sets --%s again (line %d set it already)", at, k.Value, c, line)
		}
		seen[c] = k.Line
		if given[c] {
			continue // the command line wins
		}
		var values []*yaml.Node
		switch v.Kind {
		case yaml.ScalarNode:
			if v.Tag == "!!null" {
				return fmt.Errorf("%s:%d: %s has no value", path, v.Line, name)
			}
			values = []*yaml.Node{v}
		case yaml.SequenceNode:
			if !Repeatable(f) {
				return fmt.Errorf("%s:%d: --%s takes one value, not a list", path, v.Line, name)
			}
			values = v.Content
		default:
			return fmt.Errorf("%s:%d: --%s: want a value or a list of values, not a %s", path, v.Line, name, kindName(v.Kind))
		}
		for _, item := range values {
			if item.Kind != yaml.ScalarNode {
				return fmt.Errorf("%s:%d: --%s: a list item must be a single value, not a %s", path, item.Line, name, kindName(item.Kind))
			}
			if err := fs.Set(name, item.Value); err != nil {
				return fmt.Errorf("%s:%d: --%s %q: %v", path, item.Line, name, item.Value, err)
			}
		}
	}
	return nil
}

// Repeatable reports whether f takes several values (a slice or array
// flag).
func Repeatable(f *pflag.Flag) bool {
	t := f.Value.Type()
	return strings.HasSuffix(t, "Slice") || strings.HasSuffix(t, "Array")
}

// flagAliases maps each alias flag ("alias of --X" in its usage) to the
// flag it stands for.
func flagAliases(fs *pflag.FlagSet) map[string]string {
	out := map[string]string{}
	fs.VisitAll(func(f *pflag.Flag) {
		if rest, ok := strings.CutPrefix(f.Usage, "alias of --"); ok {
			target, _, _ := strings.Cut(rest, " ")
			out[f.Name] = strings.TrimRight(target, ",;)")
		}
	})
	return out
}

func kindName(k yaml.Kind) string {
	switch k {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	case yaml.AliasNode:
		return "YAML alias"
	case yaml.DocumentNode:
		return "document"
	}
	return "value"
}

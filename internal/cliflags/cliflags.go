// Package cliflags extends pflag for agentperf's commands: help that
// lists a command's flags under titled groups (a flag no group names is
// listed under a default group, so none disappears), "did you mean" for a
// mistyped flag, flags that take zero or more values as aiperf's
// argparse nargs='*' flags do, and --config: a YAML file of flag values
// laid under the command line (config.go).
package cliflags

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/agentperf/agentperf/internal/suggest"
)

// annGroup and annOrder are the pflag annotations that carry a flag's help
// group and the group's position.
const (
	annGroup = "agentperf-help-group"
	annOrder = "agentperf-help-order"
	annPos   = "agentperf-help-pos" // position within the group
)

// Group is one titled group of a command's help: its flags, in order.
type Group struct {
	Title string
	Flags []string
}

// SetGroups assigns the flags of fs to groups (in the order given);
// flags in no group go to fallback, listed last. A group may name flags
// fs does not have.
func SetGroups(fs *pflag.FlagSet, groups []Group, fallback string) {
	for i, g := range groups {
		for j, name := range g.Flags {
			if fs.Lookup(name) == nil {
				continue // a group may name flags of other commands
			}
			_ = fs.SetAnnotation(name, annGroup, []string{g.Title})
			_ = fs.SetAnnotation(name, annOrder, []string{strconv.Itoa(i)})
			_ = fs.SetAnnotation(name, annPos, []string{strconv.Itoa(j)})
		}
	}
	fs.VisitAll(func(f *pflag.Flag) {
		if _, ok := f.Annotations[annGroup]; !ok {
			_ = fs.SetAnnotation(f.Name, annGroup, []string{fallback})
			_ = fs.SetAnnotation(f.Name, annOrder, []string{strconv.Itoa(len(groups))})
		}
	})
}

// flagRow is the left column of one flag: "-m, --model strings".
func flagRow(f *pflag.Flag) string {
	var b strings.Builder
	if f.Shorthand != "" {
		fmt.Fprintf(&b, "-%s, ", f.Shorthand)
	} else {
		b.WriteString("    ")
	}
	b.WriteString("--" + f.Name)
	if t := valueName(f); t != "" {
		b.WriteString(" " + t)
	}
	return b.String()
}

// valueName is the placeholder of a flag's value: the type, "" for a
// switch (a bool flag is written --name, or --name=false).
func valueName(f *pflag.Flag) string {
	name, _ := pflag.UnquoteUsage(f)
	if f.Value.Type() == "bool" || f.NoOptDefVal == "true" {
		return ""
	}
	return name
}

// defaultText is " (default X)" unless the default is the zero value.
func defaultText(f *pflag.Flag) string {
	switch f.DefValue {
	case "", "0", "false", "[]", "0s":
		return ""
	}
	if f.Value.Type() == "string" {
		return fmt.Sprintf(" (default %q)", f.DefValue)
	}
	return " (default " + f.DefValue + ")"
}

// WriteUsages prints the visible flags of fs, grouped when the command
// set groups (SetGroups), with descriptions wrapped at width.
func WriteUsages(w io.Writer, fs *pflag.FlagSet, width int) {
	type row struct {
		left, desc string
		pos        int
	}
	var titles []string
	rows := map[string][]row{}
	order := map[string]int{}
	col := 0
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		title := "Flags"
		if g := f.Annotations[annGroup]; len(g) == 1 {
			title = g[0] + " flags"
		}
		if _, seen := rows[title]; !seen {
			titles = append(titles, title)
			order[title] = len(titles) * 1000
			if o := f.Annotations[annOrder]; len(o) == 1 {
				n, _ := strconv.Atoi(o[0])
				order[title] = n
			}
		}
		_, usage := pflag.UnquoteUsage(f)
		r := row{left: flagRow(f), desc: usage + defaultText(f), pos: 1 << 20}
		if p := f.Annotations[annPos]; len(p) == 1 {
			r.pos, _ = strconv.Atoi(p[0])
		}
		col = max(col, len([]rune(r.left)))
		rows[title] = append(rows[title], r)
	})
	sort.SliceStable(titles, func(i, j int) bool { return order[titles[i]] < order[titles[j]] })
	col = min(col, 34)
	for i, title := range titles {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%s:\n", title)
		rs := rows[title]
		sort.SliceStable(rs, func(i, j int) bool { return rs[i].pos < rs[j].pos })
		for _, r := range rs {
			left := "  " + r.left
			pad := col + 2 + 3 - len([]rune(left))
			lines := wrap(r.desc, max(30, width-col-5))
			if pad < 2 {
				// A long flag name: the description starts on the next line.
				fmt.Fprintln(w, left)
				left, pad = "", col+5
			}
			fmt.Fprintf(w, "%s%s%s\n", left, strings.Repeat(" ", pad), lines[0])
			for _, l := range lines[1:] {
				fmt.Fprintf(w, "%s%s\n", strings.Repeat(" ", col+5), l)
			}
		}
	}
}

// wrap breaks s into lines of at most width runes at spaces.
func wrap(s string, width int) []string {
	var out []string
	line := ""
	for _, word := range strings.Fields(s) {
		switch {
		case line == "":
			line = word
		case len([]rune(line))+1+len([]rune(word)) > width:
			out = append(out, line)
			line = word
		default:
			line += " " + word
		}
	}
	return append(out, line)
}

// SuggestFlag adds "did you mean --x?" to an unknown-flag error when a
// flag of fs is a close match (edit distance at most 2, or a prefix);
// otherwise it points to 'PROG NAME --help', NAME being fs's.
func SuggestFlag(fs *pflag.FlagSet, err error, prog string) error {
	var ne *pflag.NotExistError
	if !errors.As(err, &ne) || ne.GetSpecifiedShortnames() != "" {
		return err
	}
	typed := ne.GetSpecifiedName()
	best, bestD := "", 3
	fs.VisitAll(func(f *pflag.Flag) {
		d := suggest.Distance(typed, f.Name)
		if strings.HasPrefix(f.Name, typed) && len(typed) >= 3 {
			d = min(d, 1)
		}
		if d < bestD {
			best, bestD = f.Name, d
		}
	})
	if best == "" {
		return fmt.Errorf("%w (see '%s --help' for the flags)", err, prog+" "+fs.Name())
	}
	return fmt.Errorf("%w: did you mean --%s?", err, best)
}

// nargsAnnotation marks a flag that takes zero or more values, as
// aiperf's (argparse's nargs='*'): `--gpu-telemetry`, `--gpu-telemetry
// URL`, `--gpu-telemetry URL1 URL2`.
const nargsAnnotation = "agentperf_nargs"

// MarkNargs marks the flag name of fs as taking zero or more values.
func MarkNargs(fs *pflag.FlagSet, name string) {
	if err := fs.SetAnnotation(name, nargsAnnotation, []string{"*"}); err != nil {
		panic(err)
	}
}

// JoinNargs rewrites each `--name v1 v2` of a flag marked by MarkNargs
// (the values: the arguments after it up to the next one that starts
// with "-") into `--name=v1,v2`, and a bare `--name` into `--name=`, so
// that pflag reads them as one value.
func JoinNargs(fs *pflag.FlagSet, args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		name, ok := strings.CutPrefix(a, "--")
		if f := fs.Lookup(name); !ok || f == nil || f.Annotations[nargsAnnotation] == nil {
			out = append(out, a)
			continue
		}
		var vals []string
		for i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			i++
			vals = append(vals, args[i])
		}
		out = append(out, a+"="+strings.Join(vals, ","))
	}
	return out
}

package timing

import "fmt"

// The external tests (package timing_test) build their plans from dataset
// corpora through package plan, which imports timing, so only a test
// outside the package can use it. These are the internal test helpers
// they drive a Schedule with.

type Served = served

var (
	T0            = t0
	Drive         = drive
	DriveShards   = driveShards
	ConstServer   = constServer
	MustSchedule  = mustSchedule
	CheckSchedule = checkSchedule
	Render        = render
	DiffLines     = diffLines
	DescribePlan  = describePlan
	FmtT          = fmtT
	WithTurnStart = withTurnStart
	Usable        = usable
)

// S is a second.
const S = s

// DescribeStarts renders every lane's start state, for a failure message.
func DescribeStarts(sc *Schedule) string {
	var out string
	for i := 0; i < sc.Lanes(); i++ {
		ls := sc.Lane(i).start
		out += fmt.Sprintf("lane %d: %s t*=%g streams %+v spawned %v done %v\n", i, ls.plan.TraceID, ls.tStar, ls.streams, ls.spawned, ls.done)
	}
	return out
}

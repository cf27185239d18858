//go:build race

package scenarios_test

// raceEnabled tells that the test binary was built with -race.
const raceEnabled = true

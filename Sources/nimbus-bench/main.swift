import Foundation

// nimbus-bench: every performance figure of Nimbus, measured against cp, rsync and find in the
// same run (DESIGN §9, issues #2, #3, #7). See `BenchOptions.usage` for the flags.
exit(Bench.main(arguments: Array(CommandLine.arguments.dropFirst())))

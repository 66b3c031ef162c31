import FoundationEssentials
import Glibc
import NimbusDaemon

exit(DaemonMain.run(arguments: Array(CommandLine.arguments.dropFirst()), environment: ProcessInfo.processInfo.environment))

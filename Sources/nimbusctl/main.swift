import FoundationEssentials
import Glibc
import NimbusClient

// nimbusctl: the control tool of the Nimbus sync daemon. Everything lives in NimbusClient
// (`NimbusCtl`), where it is tested; this only hands over the command line.
let status = await NimbusCtl.main(arguments: Array(CommandLine.arguments.dropFirst()),
                                  environment: ProcessInfo.processInfo.environment)
exit(status)

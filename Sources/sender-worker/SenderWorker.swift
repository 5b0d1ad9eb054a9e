import ArgumentParser
import WorkerCommands

/// The sender worker executable: configuration from the environment (see `--help`), the sender's
/// policy from the profile, providers from `SENDER_*` variables and files. The command itself is
/// in `WorkerCommands`, which the image's multi-call `fleetctl` shares.
@main
enum SenderWorkerMain {
    static func main() async {
        await SenderWorkerCommand.main()
    }
}

import DeliveryPolicy
import FleetModel
import UpstreamProcessors

/// libFuzzer's entry point: the input's first byte picks a worker's state type, the rest is the
/// image. A decoder must throw `StateImageError` or return a state; a decoded state must encode
/// again, and that image must decode to the same state (so nothing the decoder accepts is lost
/// on the next write). Any trap (overflow, out-of-bounds, precondition) is a finding.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzStateImage(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let image = Array(bytes.dropFirst())
    switch bytes[0] % 5 {
    case 0: check(DeliveryState.self, image)
    case 1: check(ScoreState.self, image)
    case 2: check(SyncState.self, image)
    case 3: check(AccessState.self, image)
    default: check(ReminderState.self, image)
    }
    return 0
}

private func check<S: BinaryStateImage & Equatable>(_: S.Type, _ image: [UInt8]) {
    guard let state = try? S(binaryImage: image) else { return }
    guard let again = try? state.binaryImage(), let back = try? S(binaryImage: again), back == state else {
        fatalError("\(S.self): a decoded state does not survive its own image")
    }
}

// SwiftPM links an executable target with `main` renamed to `<target>_main` and points `main`
// at it, so libFuzzer's own `main` is not the entry point: start libFuzzer's driver from ours.
@_silgen_name("LLVMFuzzerRunDriver")
private func runDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ callback: @convention(c) (UnsafePointer<UInt8>, Int) -> CInt
) -> CInt

@_cdecl("StateImageFuzzer_main")
public func fuzzerMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    var count = argc
    var arguments = argv
    return runDriver(&count, &arguments) { data, size in fuzzStateImage(data, size) }
}

public import FleetModel

extension DeliveryState {
    /// The user's time zone, once a sign-up or settings change told it (P-TIME-1); tools that
    /// group a user's outputs by local day (`fleetctl simulate --summary`) read it.
    public var timeZone: Zone? { zone }
}

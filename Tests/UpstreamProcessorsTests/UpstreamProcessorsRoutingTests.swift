import FleetModel
import Testing
import UpstreamProcessors

@Suite("Upstream routing")
struct UpstreamProcessorsRoutingTests {
    @Test("Each external upstream topic routes to the worker that folds it")
    func routing() {
        #expect(UpstreamProcessors.worker(for: Topics.scoreBatches) == .score)
        #expect(UpstreamProcessors.worker(for: Topics.syncResults) == .sync)
        #expect(UpstreamProcessors.worker(for: Topics.accessRequests) == .access)
        #expect(UpstreamProcessors.worker(for: Topics.reminders) == .reminder)
        #expect(UpstreamProcessors.worker(for: Topics.reminderInbox) == .reminder)
        #expect(UpstreamProcessors.worker(for: Topics.appActivity) == nil)
        #expect(UpstreamProcessors.worker(for: Topics.deliveryInbox) == nil)
        for worker in UpstreamProcessors.workers {
            #expect(UpstreamProcessors.worker(for: worker.foldedTopic) == worker)
        }
    }

    @Test("Processors are built from the settings given")
    func builtFromSettings() {
        var settings = UpstreamSettings.rin
        settings.score.changeThreshold = 7
        settings.reminders.maxPerUser = 9
        let processors = UpstreamProcessors(settings: settings)
        #expect(processors.score.settings.changeThreshold == 7)
        #expect(processors.reminder.settings.maxPerUser == 9)
        #expect(processors.sync.settings == .rin)
        #expect(processors.access.settings == .rin)
    }
}

public import Logging

extension Logger {
    /// The logger test and benchmark code hands to the clients it makes: the libraries take
    /// their logger from their caller and make none of their own.
    public static var tests: Logger { Logger(label: "tests") }
}

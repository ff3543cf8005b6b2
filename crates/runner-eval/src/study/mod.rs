//! Human studies: blind adjudication sheets exported for a person, imported back as
//! adjudication records that analyses apply over automatic matching; seed 000's H1, H7 and H8
//! finding studies, H5's judge calibration, H6's false-positive audit, and their tables in a report; the sheet reader
//! and checker they share; and A2 read from stet's review history.

pub mod adjudication;
pub mod audit;
pub(crate) mod calibration;
pub mod findings;
pub mod history;
pub mod preference;
pub mod propose;
pub mod report;
pub mod resolution;
pub(crate) mod sheet;

//! Human studies: blind adjudication sheets exported for a person, imported back as
//! adjudication records that analyses apply over automatic matching, the CSV they use, and A2
//! read from stet's review history.

pub mod adjudication;
pub mod csv;
pub mod history;

//! Telling a run's events: the recorder first (once the results folder exists: result.json as
//! it goes), then every receiver. Above both the events and the recorder, which it joins.

use std::sync::Arc;

use super::event::{Receiver, RunEvent};
use super::record::{RecordError, Recorder};

/// The receivers of one run, with the recorder (once the results folder exists) told first.
#[derive(Clone, Default)]
pub(crate) struct Events {
    recorder: Option<Arc<Recorder>>,
    receivers: Vec<Arc<dyn Receiver>>,
}

impl Events {
    pub(crate) fn new(receivers: Vec<Arc<dyn Receiver>>) -> Events {
        Events {
            recorder: None,
            receivers,
        }
    }

    pub(crate) fn with_recorder(mut self, recorder: Arc<Recorder>) -> Events {
        self.recorder = Some(recorder);
        self
    }

    /// One more receiver, told after the others (the results folder's event log, which
    /// exists only once the folder does).
    pub(crate) fn with_receiver(mut self, receiver: Arc<dyn Receiver>) -> Events {
        self.receivers.push(receiver);
        self
    }

    /// Records the event (if it is one the recorder keeps), then tells every receiver.
    pub(crate) fn emit(&self, event: &RunEvent<'_>) -> Result<(), RecordError> {
        if let Some(r) = &self.recorder {
            r.receive(event)?;
        }
        self.show(event);
        Ok(())
    }

    /// Tells the receivers only: for what the recorder does not keep (states, phases).
    pub(crate) fn show(&self, event: &RunEvent<'_>) {
        for r in &self.receivers {
            r.receive(event);
        }
    }
}

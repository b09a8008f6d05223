//! The CLI's object store registry: datafusion-cli's instrumented one, which also builds the
//! store of a cloud URL it has not seen (`s3://`, `oss://`, `cos://`, `gs://`) from the
//! environment, as the warehouse's is built. A table's data files at external paths in another
//! bucket (`data-file.external-paths`) are then read and written without registering anything.

use std::sync::Arc;

use datafusion::common::{plan_datafusion_err, DataFusionError, Result};
use datafusion::execution::object_store::ObjectStoreRegistry;
use datafusion_cli::object_storage::instrumented::InstrumentedObjectStoreRegistry;
use object_store::ObjectStore;
use url::Url;

#[derive(Debug)]
pub(crate) struct CloudStores {
    inner: Arc<InstrumentedObjectStoreRegistry>,
}

impl CloudStores {
    pub(crate) fn new(inner: Arc<InstrumentedObjectStoreRegistry>) -> Self {
        CloudStores { inner }
    }
}

impl ObjectStoreRegistry for CloudStores {
    fn register_store(&self, url: &Url, store: Arc<dyn ObjectStore>) -> Option<Arc<dyn ObjectStore>> {
        self.inner.register_store(url, store)
    }

    fn deregister_store(&self, url: &Url) -> Result<Arc<dyn ObjectStore>> {
        self.inner.deregister_store(url)
    }

    fn get_store(&self, url: &Url) -> Result<Arc<dyn ObjectStore>> {
        let missing = match self.inner.get_store(url) {
            Ok(store) => return Ok(store),
            Err(e) => e,
        };
        if !matches!(url.scheme(), "s3" | "oss" | "cos" | "gs" | "gcs") {
            return Err(missing);
        }
        // (get_store is synchronous; building a store may resolve a bucket's region)
        let handle = tokio::runtime::Handle::try_current().map_err(|_| missing_store(url))?;
        if handle.runtime_flavor() != tokio::runtime::RuntimeFlavor::MultiThread {
            return Err(missing_store(url));
        }
        let base = Url::parse(&url[..url::Position::BeforePath]).map_err(|e| plan_datafusion_err!("{e}"))?;
        let store = tokio::task::block_in_place(|| handle.block_on(crate::remote_store(&base)))?
            .ok_or_else(|| missing_store(url))?;
        self.inner.register_store(&base, store);
        self.inner.get_store(url)
    }
}

fn missing_store(url: &Url) -> DataFusionError {
    plan_datafusion_err!("No object store for {url}, and none could be built from the environment here")
}

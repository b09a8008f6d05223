//! An object store registry that builds the store of a cloud URL it has not seen (`s3://`,
//! `oss://`, `cos://`, `gs://`) from the environment (`AWS_*`, `GOOGLE_*`, ... as datafusion-cli
//! reads them), on first use. `paimon-sql`, `paimon-scheduler` and `paimon-executor` all open
//! warehouses through it: a table's files at external paths in another bucket, and a warehouse
//! a cluster process first hears of in a plan, are read and written without registering
//! anything. Feature `cli` (it uses datafusion-cli's store builders).

use std::sync::Arc;

use datafusion::common::{plan_datafusion_err, DataFusionError, Result};
use datafusion::execution::object_store::ObjectStoreRegistry;
use datafusion_cli::object_storage::{
    get_cos_object_store_builder, get_gcs_object_store_builder, get_oss_object_store_builder,
    get_s3_object_store_builder, AwsOptions, GcpOptions,
};
use object_store::ObjectStore;
use url::Url;

/// `inner`, plus cloud stores built from the environment when `inner` has none for a URL.
#[derive(Debug)]
pub struct CloudStores {
    inner: Arc<dyn ObjectStoreRegistry>,
}

impl CloudStores {
    pub fn new(inner: Arc<dyn ObjectStoreRegistry>) -> Self {
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
        let store = tokio::task::block_in_place(|| handle.block_on(remote_store(&base)))?
            .ok_or_else(|| missing_store(url))?;
        self.inner.register_store(&base, store);
        self.inner.get_store(url)
    }
}

fn missing_store(url: &Url) -> DataFusionError {
    plan_datafusion_err!("No object store for {url}, and none could be built from the environment here")
}

/// The store of a cloud URL, configured from the environment; `None` for other schemes.
pub async fn remote_store(url: &Url) -> Result<Option<Arc<dyn ObjectStore>>> {
    let aws = AwsOptions::default();
    Ok(Some(match url.scheme() {
        "s3" => Arc::new(get_s3_object_store_builder(url, &aws, false).await?.build()?),
        "oss" => Arc::new(get_oss_object_store_builder(url, &aws)?.build()?),
        "cos" => Arc::new(get_cos_object_store_builder(url, &aws)?.build()?),
        "gs" | "gcs" => Arc::new(get_gcs_object_store_builder(url, &GcpOptions::default())?.build()?),
        _ => return Ok(None),
    }))
}

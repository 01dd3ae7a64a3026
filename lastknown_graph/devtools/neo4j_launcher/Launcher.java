/*
 * Local development Neo4j server for lastknown_graph.
 *
 * Run as a single-file source program (JEP 330) on the classpath that Maven
 * resolves from the pom.xml next to this file:
 *
 *   java -Xmx1g --add-opens=... -cp <classpath> Launcher.java \
 *       --data-dir DIR --work-dir DIR [--bolt-port 7687] [--http-port 7474] \
 *       [--pagecache 256m] [--logs-dir DIR] [--browser-dir DIR]
 *
 * The in-process harness puts its neo4j_home (logs, certificates) into a random,
 * MD5-named folder below --work-dir and deletes that folder on a clean close.
 * The store itself lives in --data-dir (GraphDatabaseSettings.data_directory),
 * outside that folder, so the data survives stop/start.
 *
 * Prints exactly one line starting with LASTKNOWN_NEO4J_READY once Bolt (and
 * HTTP, if enabled) accept connections, then blocks until the JVM is told to
 * stop (SIGTERM/SIGINT), when a shutdown hook closes the server cleanly.
 */

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import org.neo4j.configuration.GraphDatabaseSettings;
import org.neo4j.configuration.connectors.BoltConnector;
import org.neo4j.configuration.connectors.BoltConnectorInternalSettings;
import org.neo4j.configuration.connectors.HttpConnector;
import org.neo4j.configuration.connectors.HttpsConnector;
import org.neo4j.configuration.helpers.SocketAddress;
import org.neo4j.harness.Neo4j;
import org.neo4j.harness.Neo4jBuilder;
import org.neo4j.harness.Neo4jBuilders;
import org.neo4j.io.ByteUnit;
import org.neo4j.io.fs.FileUtils;
import org.neo4j.server.configuration.ServerSettings;

public class Launcher {
    static final String READY_PREFIX = "LASTKNOWN_NEO4J_READY";
    static final String HOST = "127.0.0.1";
    private static final Pattern MD5_NAME = Pattern.compile("[0-9a-f]{32}");

    public static void main(String[] argv) throws Exception {
        Map<String, String> args = parseArgs(argv);
        Path dataDir = Paths.get(required(args, "--data-dir")).toAbsolutePath();
        Path workDir = Paths.get(required(args, "--work-dir")).toAbsolutePath();
        int boltPort = Integer.parseInt(args.getOrDefault("--bolt-port", "7687"));
        int httpPort = Integer.parseInt(args.getOrDefault("--http-port", "7474"));
        long pagecache = ByteUnit.parse(args.getOrDefault("--pagecache", "256m"));

        Files.createDirectories(dataDir);
        Files.createDirectories(workDir);
        removeStaleServerFolders(workDir);

        Neo4jBuilder builder = Neo4jBuilders.newInProcessBuilder(workDir)
                .withConfig(GraphDatabaseSettings.data_directory, dataDir)
                .withConfig(GraphDatabaseSettings.pagecache_memory, pagecache)
                .withConfig(GraphDatabaseSettings.auth_enabled, false)
                .withConfig(GraphDatabaseSettings.udc_enabled, false)
                // Defaults preallocate a 256 MiB transaction log per database
                // (system + neo4j = 512 MiB for an empty store) and keep 2 days of
                // logs; a development store does not need either.
                .withConfig(GraphDatabaseSettings.preallocate_logical_logs, false)
                .withConfig(GraphDatabaseSettings.logical_log_rotation_threshold, ByteUnit.mebiBytes(64))
                .withConfig(GraphDatabaseSettings.keep_logical_logs, "256M size")
                .withConfig(ServerSettings.allow_telemetry, false)
                .withConfig(BoltConnector.enabled, true)
                .withConfig(BoltConnector.listen_address, new SocketAddress(HOST, boltPort))
                .withConfig(BoltConnector.advertised_address, new SocketAddress(HOST, boltPort))
                .withConfig(HttpsConnector.enabled, false)
                // Bolt waits 2 x 5 s for idle event loops on shutdown by default;
                // a local dev server has nothing to drain.
                .withConfig(BoltConnectorInternalSettings.connection_shutdown_wait_time, Duration.ofSeconds(1))
                .withConfig(BoltConnectorInternalSettings.thread_pool_shutdown_wait_time, Duration.ofSeconds(1));
        if (httpPort > 0) {
            builder = builder
                    .withConfig(HttpConnector.enabled, true)
                    .withConfig(HttpConnector.listen_address, new SocketAddress(HOST, httpPort))
                    .withConfig(HttpConnector.advertised_address, new SocketAddress(HOST, httpPort));
        } else {
            builder = builder.withConfig(HttpConnector.enabled, false);
        }
        if (args.containsKey("--logs-dir")) {
            // debug.log, http.log, query.log, security.log (the harness's own user
            // log, neo4j.log, stays in its random folder and is deleted on close).
            Path logsDir = Paths.get(args.get("--logs-dir")).toAbsolutePath();
            Files.createDirectories(logsDir);
            builder = builder.withConfig(GraphDatabaseSettings.logs_directory, logsDir);
        }
        if (args.containsKey("--browser-dir")) {
            // Directory holding neo4j-browser-*.zip; by default (directory absent)
            // the server serves a neo4j-browser jar found on the classpath.
            builder = builder.withConfig(ServerSettings.web_dir_path, Paths.get(args.get("--browser-dir")));
        }

        final Neo4j neo4j;
        try {
            neo4j = builder.build();
        } catch (Throwable t) {
            System.err.println("LASTKNOWN_NEO4J_FAILED " + t);
            t.printStackTrace();
            System.err.flush();
            System.exit(2);
            return;
        }

        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            PrintStream out = System.out;
            long begin = System.nanoTime();
            out.println("LASTKNOWN_NEO4J_STOPPING");
            out.flush();
            try {
                neo4j.close();
            } catch (Throwable t) {
                t.printStackTrace();
            }
            out.println("LASTKNOWN_NEO4J_STOPPED in " + (System.nanoTime() - begin) / 1_000_000 + " ms");
            out.flush();
            stopped.countDown();
        }, "lastknown-neo4j-shutdown"));

        String http = httpPort > 0 ? neo4j.httpURI().toString().replaceAll("/$", "") : "-";
        String bolt = neo4j.boltURI().toString().replaceAll("/$", "");
        System.out.println(READY_PREFIX + " " + bolt + " " + http);
        System.out.flush();

        // Block forever; the shutdown hook does the work on SIGTERM/SIGINT.
        stopped.await();
    }

    private static void removeStaleServerFolders(Path workDir) throws IOException {
        // A killed (SIGKILL) launcher leaves its random harness folder behind.
        try (Stream<Path> children = Files.list(workDir)) {
            for (Path child : (Iterable<Path>) children::iterator) {
                if (Files.isDirectory(child) && MD5_NAME.matcher(child.getFileName().toString()).matches()) {
                    FileUtils.deleteDirectory(child);
                }
            }
        }
    }

    private static Map<String, String> parseArgs(String[] argv) {
        Map<String, String> args = new HashMap<>();
        for (int i = 0; i < argv.length; i++) {
            String key = argv[i];
            if (!key.startsWith("--") || i + 1 >= argv.length) {
                throw new IllegalArgumentException("expected --name value pairs, got: " + key);
            }
            args.put(key, argv[++i]);
        }
        return args;
    }

    private static String required(Map<String, String> args, String key) {
        String value = args.get(key);
        if (value == null) {
            throw new IllegalArgumentException("missing required argument " + key);
        }
        return value;
    }
}

/*
 * DynamoDB Local, listening on 127.0.0.1 only.
 *
 * DynamoDB Local (1.25.1) has no option for the address it listens on: its DynamoDBProxyServer makes a Jetty
 * Server(port), whose connector binds every interface, so anyone who reached the port could write an admin key
 * into the local stack's tables. This main does what DynamoDB Local's own main does (the same command-line
 * arguments, the same server), and sets the server's connectors to 127.0.0.1 before it starts. When it cannot
 * (a later DynamoDB Local changed the field or the connector), it exits with status 3 and says why: the stack
 * refuses to start rather than listen on every interface.
 *
 * It also indexes DynamoDB Local's stream records by stream. DynamoDB Local keeps every table's stream records in one
 * SQLite table (`us`, keyed by sequence number only) for 24 hours, and every write to a table with a stream asks
 * for the stream's oldest record (`SELECT MIN(SequenceNumber) FROM us WHERE StreamID = ?`): without an index, each
 * write read every stream record of every table. A test run's shared DynamoDB Local, or a local stack written to for
 * hours, slowed down with every record written: the same 40 batches cost the JVM 4.4 s of CPU on a fresh one and
 * 67.6 s after five such loads. The index is made before the server listens; if this DynamoDB Local is not laid out
 * as expected (another version), the server starts without it and says so ("stream records not indexed").
 *
 * And it holds the data dir: before DynamoDB Local opens anything there, it takes an exclusive lock on
 * `<dbPath>/dynamodb-local.lock` (FileChannel.tryLock, which the system lets go of when the JVM ends, however it ends)
 * and exits with status 4 when another process holds it. Two DynamoDB Locals on one SQLite file (`npm start &` and, at
 * once, `npm run keys`, which starts its own when no stack is up yet) each wrote into it, and a key the command made
 * could be lost; a lock held by whoever opens the file cannot be raced or left stale, on any system. A data dir that
 * cannot be locked at all (a file system without locks) exits with status 5, said as such.
 *
 * And it ends with the process that started it: it reads its standard input (a pipe from that process) until the
 * end and then exits, so that a launcher killed with SIGKILL, even while DynamoDB Local starts, leaves no JVM holding
 * the data dir's lock, on any system (a JVM left so had blocked every later start on the data dir).
 *
 * Built for Java 8 and later with `npm run build:dynamodb-launcher` (javac; the .class beside this file is
 * kept in the repository, so a machine with only a Java runtime runs it). infra/local/dynamodb-local.ts runs it.
 */
import com.amazonaws.services.dynamodbv2.local.main.ServerRunner;
import com.amazonaws.services.dynamodbv2.local.server.DynamoDBProxyServer;
import com.almworks.sqlite4java.SQLiteConnection;
import com.almworks.sqlite4java.SQLiteException;
import com.almworks.sqlite4java.SQLiteJob;
import com.almworks.sqlite4java.SQLiteQueue;
import java.io.IOException;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import org.eclipse.jetty.server.Connector;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;

public final class LoopbackDynamoDbLocal {
  static final String HOST = "127.0.0.1";

  /** Exit status when another process holds the data dir (its lock): the caller waits for it or says so. */
  static final int IN_USE = 4;

  /** Exit status when the data dir cannot be locked at all: the caller says so at once. */
  static final int UNLOCKABLE = 5;

  static final String LOCK_FILE = "dynamodb-local.lock";

  /** Held for the JVM's whole life (a static field: never collected, never released before the JVM ends). */
  private static FileLock dataLock;

  public static void main(String[] args) throws Exception {
    endWithStarter();
    lockDataDir(args);
    DynamoDBProxyServer proxy = ServerRunner.createServerFromCommandLineArgs(args);
    Server server;
    try {
      Field field = DynamoDBProxyServer.class.getDeclaredField("server");
      field.setAccessible(true);
      server = (Server) field.get(proxy);
    } catch (ReflectiveOperationException | ClassCastException e) {
      refuse("its server could not be reached (" + e + ")");
      return;
    }
    Connector[] connectors = server.getConnectors();
    if (connectors.length == 0) refuse("its server has no connector");
    for (Connector connector : connectors) {
      if (!(connector instanceof ServerConnector)) refuse("its connector is a " + connector.getClass().getName());
      ((ServerConnector) connector).setHost(HOST);
    }
    indexStreamRecords(proxy);
    proxy.start();
  }

  /** A daemon thread that exits the JVM once its standard input ends (the process that started it is gone). */
  static void endWithStarter() {
    Thread watch = new Thread(() -> {
      byte[] buffer = new byte[256];
      try {
        while (System.in.read(buffer) >= 0) {
          // nothing is sent: only the end matters
        }
      } catch (IOException e) {
        // a broken pipe is an end too
      }
      System.err.println("DynamoDB Local: the process that started it is gone; stopping");
      System.exit(0);
    }, "end-with-starter");
    watch.setDaemon(true);
    watch.start();
  }

  /** Takes the data dir's lock (see above) when there is one (`-dbPath`; in memory, none); exits IN_USE if it is held. */
  static void lockDataDir(String[] args) {
    String dbPath = null;
    for (int i = 0; i + 1 < args.length; i++) if ("-dbPath".equals(args[i])) dbPath = args[i + 1];
    if (dbPath == null) return;
    try {
      FileChannel channel = FileChannel.open(Paths.get(dbPath, LOCK_FILE), StandardOpenOption.CREATE, StandardOpenOption.WRITE);
      dataLock = channel.tryLock();
    } catch (OverlappingFileLockException e) {
      dataLock = null;
    } catch (IOException e) {
      System.err.println("DynamoDB Local was not started: its data dir " + dbPath + " could not be locked (" + e + ")");
      System.exit(UNLOCKABLE);
    }
    if (dataLock == null) {
      System.err.println("DynamoDB Local was not started: its data dir " + dbPath + " is in use by another DynamoDB Local");
      System.exit(IN_USE);
    }
  }

  /** The statements that index the stream records (`us`) and shards (`ss`) by stream; each is a no-op once made. */
  static final String[] STREAM_INDEXES = {
    "CREATE INDEX IF NOT EXISTS us_by_stream ON us (StreamID, SequenceNumber)",
    "CREATE INDEX IF NOT EXISTS ss_by_stream ON ss (StreamID)",
  };

  /** The environment variable naming the database to index ("<access key id>_<region>"). */
  static final String DATABASE_VARIABLE = "LEDGER_DYNAMODB_DATABASE";

  /** Indexes the stack's database's stream records (see above); prints whether it did. Never stops the start. */
  private static void indexStreamRecords(DynamoDBProxyServer proxy) {
    try {
      Object serverHandler = field(DynamoDBProxyServer.class, "serverHandler").get(proxy);
      Object requestHandler = field(serverHandler.getClass().getSuperclass(), "primaryHandler").get(serverHandler);
      // The database the stack's callers use: DynamoDB Local keeps one per access key id and region, named
      // "<key>_<region>" (with -sharedDb, one whatever the name). Named in the environment, not on the command line,
      // which every local user can read: the key is what keeps the database the stack's.
      String database = System.getenv(DATABASE_VARIABLE);
      if (database == null || database.isEmpty()) throw new IllegalStateException(DATABASE_VARIABLE + " is not set");
      // getHandler opens it as the first request would.
      Method getHandler = requestHandler.getClass().getDeclaredMethod("getHandler", String.class);
      getHandler.setAccessible(true);
      Object client = getHandler.invoke(requestHandler, database);
      Object access = field(client.getClass(), "dbAccess").get(client);
      SQLiteQueue queue = (SQLiteQueue) field(access.getClass(), "queue").get(access);
      SQLiteJob<Object> job = queue.execute(new SQLiteJob<Object>() {
        @Override
        protected Object job(SQLiteConnection connection) throws SQLiteException {
          for (String sql : STREAM_INDEXES) connection.exec(sql);
          return Boolean.TRUE;
        }
      });
      if (job.complete() == null) throw new IllegalStateException(String.valueOf(job.getError()));
      System.out.println("DynamoDB Local: stream records indexed");
    } catch (ReflectiveOperationException | RuntimeException e) {
      System.err.println("DynamoDB Local: stream records not indexed (" + e + "): its writes slow down as its streams grow.");
    }
  }

  private static Field field(Class<?> type, String name) throws NoSuchFieldException {
    Field field = type.getDeclaredField(name);
    field.setAccessible(true);
    return field;
  }

  private static void refuse(String why) {
    System.err.println("DynamoDB Local cannot be bound to " + HOST + ": " + why + ". Not started.");
    System.exit(3);
  }
}
